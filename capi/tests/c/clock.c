/* DOCA 3.3's clocks from C, in the shape of the clock_cross_timestamp sample: the device's
 * NIC clock caps, a clock object, each clock read alone (.counter for the host's counter,
 * .ts otherwise), cross-timestamps whose NIC reading lies within the error margin of the
 * primary's, and the error paths. With the argument "limited" the topology gives the device
 * the free-running clock only (the test writes that topology). Prints "ok" when every check
 * holds. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include <doca_clock.h>
#include <doca_dev.h>
#include <doca_error.h>

#include "open.h"

static const uint64_t all_clocks[] = {
	DOCA_CLOCK_NIC_FREE_RUNNING, DOCA_CLOCK_NIC_REAL_TIME,	DOCA_CLOCK_NIC_DPA_TIMER,
	DOCA_CLOCK_HOST_COUNTER_CYCLES, DOCA_CLOCK_HOST_REAL_TIME, DOCA_CLOCK_HOST_MONOTONIC,
	DOCA_CLOCK_HOST_MONOTONIC_RAW,
};

static int64_t ns(union doca_clock_timespec_t t)
{
	return (int64_t)t.ts.tv_sec * 1000000000 + (int64_t)t.ts.tv_nsec;
}

static void full(struct doca_dev *dev, struct doca_clock *clock)
{
	union doca_clock_timespec_t prim, nic, a, b;
	uint64_t margin = UINT64_MAX;
	size_t i;
	int64_t diff;

	CHECK_CODE(doca_clock_cap_nic_free_running_is_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
	CHECK_CODE(doca_clock_cap_nic_real_time_is_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
	CHECK_CODE(doca_clock_cap_nic_dpa_timer_is_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
	for (i = 0; i < sizeof(all_clocks) / sizeof(all_clocks[0]); i++) {
		memset(&a, 0, sizeof(a));
		CHECK_CODE(doca_clock_get_timestamp(clock, all_clocks[i], &a), DOCA_SUCCESS);
		if (all_clocks[i] == DOCA_CLOCK_HOST_COUNTER_CYCLES)
			CHECK(a.counter > 0);
		else
			CHECK(a.ts.tv_sec > 0 && a.ts.tv_nsec >= 0 && a.ts.tv_nsec < 1000000000);
	}
	/* monotonic clocks do not go back */
	CHECK_CODE(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_FREE_RUNNING, &a), DOCA_SUCCESS);
	CHECK_CODE(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_FREE_RUNNING, &b), DOCA_SUCCESS);
	CHECK(ns(b) >= ns(a));

	/* the NIC's real-time clock is the host's real time: the two agree within the margin */
	for (i = 0; i < 50; i++) {
		CHECK_CODE(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_REAL_TIME, DOCA_CLOCK_NIC_REAL_TIME, &prim,
							 &nic, &margin),
			   DOCA_SUCCESS);
		diff = ns(nic) - ns(prim);
		if (diff < 0)
			diff = -diff;
		CHECK((uint64_t)diff <= margin);
	}
	/* against the host's counter: the primary in .counter, the margin in cycles */
	CHECK_CODE(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_COUNTER_CYCLES, DOCA_CLOCK_NIC_FREE_RUNNING,
						 &prim, &nic, &margin),
		   DOCA_SUCCESS);
	CHECK(prim.counter > 0 && nic.ts.tv_sec > 0);

	/* error paths */
	CHECK_CODE(doca_clock_get_timestamp(clock, 0, &a), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_REAL_TIME | DOCA_CLOCK_NIC_FREE_RUNNING, &a),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_clock_get_timestamp(clock, DOCA_CLOCK_HOST_MONOTONIC, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_clock_get_timestamp(NULL, DOCA_CLOCK_HOST_MONOTONIC, &a), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_REAL_TIME, DOCA_CLOCK_HOST_MONOTONIC, &prim, &nic,
						 &margin),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_REAL_TIME, DOCA_CLOCK_NIC_REAL_TIME, &prim, &nic,
						 NULL),
		   DOCA_ERROR_INVALID_VALUE);
}

static void limited(struct doca_dev *dev, struct doca_clock *clock)
{
	union doca_clock_timespec_t prim, nic;
	uint64_t margin;

	CHECK_CODE(doca_clock_cap_nic_free_running_is_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
	CHECK_CODE(doca_clock_cap_nic_real_time_is_supported(doca_dev_as_devinfo(dev)), DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_clock_cap_nic_dpa_timer_is_supported(doca_dev_as_devinfo(dev)), DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_clock_get_timestamp(clock, DOCA_CLOCK_NIC_DPA_TIMER, &nic), DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_MONOTONIC, DOCA_CLOCK_NIC_REAL_TIME, &prim, &nic,
						 &margin),
		   DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_clock_get_crosstimestamp(clock, DOCA_CLOCK_HOST_MONOTONIC, DOCA_CLOCK_NIC_FREE_RUNNING, &prim,
						 &nic, &margin),
		   DOCA_SUCCESS);
}

int main(int argc, char **argv)
{
	struct doca_dev *dev = NULL;
	struct doca_clock *clock = NULL;

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	if (dev == NULL)
		return checks_result();
	CHECK_CODE(doca_clock_create(dev, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_clock_create(dev, &clock), DOCA_SUCCESS);
	if (clock != NULL) {
		if (argc > 1 && strcmp(argv[1], "limited") == 0)
			limited(dev, clock);
		else
			full(dev, clock);
		CHECK_CODE(doca_clock_destroy(clock), DOCA_SUCCESS);
		CHECK_CODE(doca_clock_destroy(clock), DOCA_ERROR_INVALID_VALUE);
	}
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	return checks_result();
}
