/* doca-emu: DOCA 3.3's clocks: the NIC's clocks of a device (free-running, real-time, DPA
 * timer) and the host's (cycle counter, real-time, monotonic, monotonic raw), read one at a
 * time or as a cross-timestamp.
 *
 * What the emulated clocks read (see the doca_core::hwclock module): the NIC's free-running
 * clock and DPA timer are CLOCK_MONOTONIC_RAW plus a fixed offset of the device (every process
 * sees the same NIC time), the NIC's real-time clock is CLOCK_REALTIME (a NIC synchronised to
 * the host), the host's counter is CLOCK_MONOTONIC_RAW in nanoseconds (a counter of 1 GHz, not
 * the CPU's TSC), the host's clocks are the system clocks of their names. Which NIC clocks a
 * device has is the topology's clocks= of its device line (all three by default).
 *
 * The DOCA_CLOCK_* values are this emulator's (one bit each): a call takes one of them; 0, a
 * mask of several or an unknown bit is DOCA_ERROR_INVALID_VALUE. */
#ifndef DOCA_EMU_CLOCK_H_
#define DOCA_EMU_CLOCK_H_

#include <stdint.h>
#include <time.h>

#include "doca_compat.h"
#include "doca_dev.h"
#include "doca_error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum doca_clock_type {
	DOCA_CLOCK_NIC_FREE_RUNNING = 1 << 0,
	DOCA_CLOCK_NIC_REAL_TIME = 1 << 1,
	DOCA_CLOCK_NIC_DPA_TIMER = 1 << 2,
	DOCA_CLOCK_HOST_COUNTER_CYCLES = 1 << 3,
	DOCA_CLOCK_HOST_REAL_TIME = 1 << 4,
	DOCA_CLOCK_HOST_MONOTONIC = 1 << 5,
	DOCA_CLOCK_HOST_MONOTONIC_RAW = 1 << 6,
};

/* A reading: .counter for DOCA_CLOCK_HOST_COUNTER_CYCLES, .ts for every other clock. */
union doca_clock_timespec_t {
	struct timespec ts;
	uint64_t counter;
};

struct doca_clock;

/* DOCA_SUCCESS when the device has that NIC clock, else DOCA_ERROR_NOT_SUPPORTED. */
DOCA_EXPERIMENTAL doca_error_t doca_clock_cap_nic_free_running_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_clock_cap_nic_real_time_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_clock_cap_nic_dpa_timer_is_supported(const struct doca_devinfo *devinfo);

DOCA_EXPERIMENTAL doca_error_t doca_clock_create(struct doca_dev *dev, struct doca_clock **clock);
DOCA_EXPERIMENTAL doca_error_t doca_clock_destroy(struct doca_clock *clock);

/* clock_type now; a NIC clock the device lacks: DOCA_ERROR_NOT_SUPPORTED. */
DOCA_EXPERIMENTAL doca_error_t doca_clock_get_timestamp(const struct doca_clock *clock, uint64_t clock_type,
							union doca_clock_timespec_t *timestamp);

/* The NIC clock nic_clock read between two readings of primary_clock (a few tries, the
 * narrowest window kept): primary_timestamp is the middle of the window, error_margin_nsecs
 * half its width (in cycles when the primary is DOCA_CLOCK_HOST_COUNTER_CYCLES). nic_clock not a
 * NIC clock: DOCA_ERROR_INVALID_VALUE. */
DOCA_EXPERIMENTAL doca_error_t doca_clock_get_crosstimestamp(const struct doca_clock *clock, uint64_t primary_clock,
							     uint64_t nic_clock,
							     union doca_clock_timespec_t *primary_timestamp,
							     union doca_clock_timespec_t *nic_timestamp,
							     uint64_t *error_margin_nsecs);

#ifdef __cplusplus
}
#endif

#endif
