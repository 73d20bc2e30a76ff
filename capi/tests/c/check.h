/* The checks of our C test programs: each failure is printed with its line and counted. */
#ifndef CAPI_TEST_CHECK_H_
#define CAPI_TEST_CHECK_H_

#include <stdio.h>

#include <doca_error.h>

static int failures;

#define CHECK(cond)                                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                          \
		}                                                                            \
	} while (0)

#define CHECK_CODE(expr, want)                                                                    \
	do {                                                                                      \
		doca_error_t got_ = (expr);                                                       \
		if (got_ != (want)) {                                                             \
			fprintf(stderr, "%s:%d: %s gave %s, expected %s\n", __FILE__, __LINE__, #expr, \
				doca_error_get_name(got_), doca_error_get_name(want));                   \
			failures++;                                                               \
		}                                                                                 \
	} while (0)

/* The program's exit: 0 and "ok" when every check held. */
static inline int checks_result(void)
{
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}

#endif
