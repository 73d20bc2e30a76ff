//! `doca_error.h` and `doca_types.h`: the codes' values, names and descriptions, and
//! `union doca_data`.

use doca_core::{Data, Error};

#[test]
fn doca_error_t_values_and_doca_error_get_name() {
    let table = [
        (0, "DOCA_SUCCESS"),
        (1, "DOCA_ERROR_UNKNOWN"),
        (2, "DOCA_ERROR_NOT_PERMITTED"),
        (3, "DOCA_ERROR_IN_USE"),
        (4, "DOCA_ERROR_NOT_SUPPORTED"),
        (5, "DOCA_ERROR_AGAIN"),
        (6, "DOCA_ERROR_INVALID_VALUE"),
        (7, "DOCA_ERROR_NO_MEMORY"),
        (8, "DOCA_ERROR_INITIALIZATION"),
        (9, "DOCA_ERROR_TIME_OUT"),
        (10, "DOCA_ERROR_SHUTDOWN"),
        (11, "DOCA_ERROR_CONNECTION_RESET"),
        (12, "DOCA_ERROR_CONNECTION_ABORTED"),
        (13, "DOCA_ERROR_CONNECTION_INPROGRESS"),
        (14, "DOCA_ERROR_NOT_CONNECTED"),
        (15, "DOCA_ERROR_NO_LOCK"),
        (16, "DOCA_ERROR_NOT_FOUND"),
        (17, "DOCA_ERROR_IO_FAILED"),
        (18, "DOCA_ERROR_BAD_STATE"),
        (19, "DOCA_ERROR_UNSUPPORTED_VERSION"),
        (20, "DOCA_ERROR_OPERATING_SYSTEM"),
        (21, "DOCA_ERROR_DRIVER"),
        (22, "DOCA_ERROR_UNEXPECTED"),
        (23, "DOCA_ERROR_ALREADY_EXIST"),
        (24, "DOCA_ERROR_FULL"),
        (25, "DOCA_ERROR_EMPTY"),
        (26, "DOCA_ERROR_IN_PROGRESS"),
        (27, "DOCA_ERROR_TOO_BIG"),
    ];
    for (code, name) in table {
        let e = Error::from_code(code).unwrap_or_else(|| panic!("code {code}"));
        assert_eq!((e.code(), e.name()), (code, name));
        assert_eq!(Error::name_of(code), name);
        assert!(!e.descr().is_empty(), "doca_error_get_descr of {name}");
        assert_eq!(e.is_error(), code != 0, "DOCA_IS_ERROR");
    }
    assert_eq!(Error::ALL.len(), table.len());
    assert_eq!(Error::from_code(28), None);
    assert_eq!(Error::name_of(28), doca_core::UNRECOGNIZED);
    assert_eq!(Error::check(0), Ok(()));
    assert_eq!(Error::check(5), Err(Error::Again));
}

#[test]
fn doca_data_is_eight_bytes_pointer_or_u64() {
    assert_eq!(std::mem::size_of::<Data>(), 8);
    assert_eq!(Data::from_u64(42).as_u64(), 42);
    assert_eq!(Data::default().as_u64(), 0);
    let x = 7u32;
    let d = Data::from_ptr(&x as *const u32);
    assert_eq!(d.as_ptr::<u32>() as *const u32, &x as *const u32);
}
