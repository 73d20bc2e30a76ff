/* A C program in the shape of DOCA's samples: opening the DPU device and a representor by PCI
 * address through doca_dev.h, a progress engine through doca_pe.h, and the error paths
 * (NULL handles, closed handles, wrong side, short buffers). Exits 0 when every check holds. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_mmap.h>
#include <doca_pe.h>

#include "open.h"

/* The host side: host functions only; no representors, and the DPU's device out of sight. */
static void host_side(void)
{
	struct doca_dev *host = NULL, *dpu = NULL;
	struct doca_devinfo_rep **reps;
	uint32_t nreps;
	uint8_t flag;

	CHECK_CODE(open_dev("b1:00.0", &host), DOCA_SUCCESS);
	CHECK_CODE(doca_devinfo_rep_cap_is_filter_all_supported(doca_dev_as_devinfo(host), &flag),
		   DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_devinfo_rep_create_list(host, DOCA_DEVINFO_REP_FILTER_ALL, &reps, &nreps),
		   DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(open_dev("03:00.0", &dpu), DOCA_ERROR_NOT_FOUND);
	CHECK_CODE(doca_dev_close(host), DOCA_SUCCESS);
}

int main(int argc, char **argv)
{
	struct doca_dev *dpu = NULL, *host = NULL;
	struct doca_devinfo_rep **reps;
	struct doca_dev_rep *rep = NULL;
	struct doca_pe *pe = NULL;
	char pci[DOCA_DEVINFO_PCI_ADDR_SIZE], name[DOCA_DEVINFO_IFACE_NAME_SIZE], tiny[2];
	uint32_t nreps, i;
	uint8_t flag, equal;
	size_t inflight;
	int fd;

	if (argc > 1 && strcmp(argv[1], "host") == 0) {
		host_side();
		goto done;
	}

	/* doca_error.h */
	CHECK(strcmp(doca_error_get_name(DOCA_ERROR_AGAIN), "DOCA_ERROR_AGAIN") == 0);
	CHECK(strcmp(doca_error_get_name(DOCA_SUCCESS), "DOCA_SUCCESS") == 0);
	CHECK(strlen(doca_error_get_descr(DOCA_ERROR_NOT_FOUND)) > 0);
	CHECK(strcmp(doca_error_get_name((doca_error_t)999), "Unrecognized error code") == 0);

	/* doca_dev.h: the DPU device, its name, its representors */
	CHECK_CODE(open_dev("03:00.0", &dpu), DOCA_SUCCESS);
	CHECK_CODE(doca_devinfo_get_pci_addr_str(doca_dev_as_devinfo(dpu), pci), DOCA_SUCCESS);
	CHECK(strcmp(pci, "0000:03:00.0") == 0);
	CHECK_CODE(doca_devinfo_get_iface_name(doca_dev_as_devinfo(dpu), name, sizeof(name)), DOCA_SUCCESS);
	CHECK(strcmp(name, "p0") == 0);
	CHECK_CODE(doca_devinfo_get_ibdev_name(doca_dev_as_devinfo(dpu), tiny, sizeof(tiny)), DOCA_ERROR_INVALID_VALUE);
	/* The header's sizes are minimums, whatever the name's length ("p0" fits in 3 bytes). */
	CHECK_CODE(doca_devinfo_get_iface_name(doca_dev_as_devinfo(dpu), name, DOCA_DEVINFO_IFACE_NAME_SIZE - 1),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_devinfo_get_ibdev_name(doca_dev_as_devinfo(dpu), name, DOCA_DEVINFO_IBDEV_NAME_SIZE - 1),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_devinfo_get_ibdev_name(doca_dev_as_devinfo(dpu), name, DOCA_DEVINFO_IBDEV_NAME_SIZE), DOCA_SUCCESS);
	CHECK_CODE(doca_devinfo_rep_cap_is_filter_all_supported(doca_dev_as_devinfo(dpu), &flag), DOCA_SUCCESS);
	CHECK(flag == 1);
	CHECK_CODE(doca_devinfo_rep_create_list(dpu, DOCA_DEVINFO_REP_FILTER_NET, &reps, &nreps), DOCA_SUCCESS);
	CHECK(nreps == 3);
	CHECK_CODE(doca_devinfo_rep_cap_is_filter_net_supported(doca_dev_as_devinfo(dpu), &flag), DOCA_SUCCESS);
	CHECK(flag == 1);
	CHECK_CODE(doca_devinfo_rep_cap_is_filter_emulated_supported(doca_dev_as_devinfo(dpu), &flag), DOCA_SUCCESS);
	CHECK_CODE(doca_devinfo_cap_is_hotplug_manager_supported(doca_dev_as_devinfo(dpu), &flag), DOCA_SUCCESS);
	for (i = 0; i < nreps; i++) {
		char vuid[DOCA_DEVINFO_REP_VUID_SIZE];
		enum doca_pci_func_type type;

		CHECK_CODE(doca_devinfo_rep_get_vuid(reps[i], vuid, sizeof(vuid)), DOCA_SUCCESS);
		CHECK_CODE(doca_devinfo_rep_get_vuid(reps[i], vuid, 0), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_devinfo_rep_get_pci_func_type(reps[i], &type), DOCA_SUCCESS);
		CHECK(type == DOCA_PCI_FUNC_TYPE_PF);
		CHECK_CODE(doca_devinfo_rep_get_is_hotplug(reps[i], &flag), DOCA_SUCCESS);
		CHECK_CODE(doca_devinfo_rep_is_equal_pci_addr(reps[i], "b1:00.0", &equal), DOCA_SUCCESS);
		if (equal)
			CHECK_CODE(doca_dev_rep_open(reps[i], &rep), DOCA_SUCCESS);
	}
	CHECK(rep != NULL);
	CHECK_CODE(doca_devinfo_rep_get_pci_addr_str(doca_dev_rep_as_devinfo(rep), pci), DOCA_SUCCESS);
	CHECK(strcmp(pci, "0000:b1:00.0") == 0);
	CHECK_CODE(doca_devinfo_rep_destroy_list(reps), DOCA_SUCCESS);
	CHECK_CODE(doca_devinfo_rep_destroy_list(reps), DOCA_ERROR_INVALID_VALUE); /* twice */
	CHECK_CODE(doca_dev_rep_close(rep), DOCA_SUCCESS);

	/* the DPU side sees only the DPU's device */
	CHECK_CODE(open_dev("b1:00.0", &host), DOCA_ERROR_NOT_FOUND);
	CHECK_CODE(open_dev("aa:00.0", &host), DOCA_ERROR_NOT_FOUND);

	/* NULL and closed handles */
	CHECK_CODE(doca_devinfo_create_list(NULL, &nreps), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_devinfo_get_pci_addr_str(NULL, pci), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_devinfo_is_equal_pci_addr(doca_dev_as_devinfo(dpu), "not-an-address", &equal),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_dev_close(dpu), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dpu), DOCA_ERROR_INVALID_VALUE);
	/* NULL closes nothing (the header has no invalid-input error here; NVIDIA's
	 * dma_local_copy relies on it). */
	CHECK_CODE(doca_dev_close(NULL), DOCA_SUCCESS);
	CHECK(doca_dev_as_devinfo(dpu) == NULL);
	{
		/* A new device may take the closed one's slot: the old handle stays stale. */
		struct doca_dev *again = NULL;

		CHECK_CODE(open_dev("03:00.0", &again), DOCA_SUCCESS);
		CHECK(again != dpu && doca_dev_as_devinfo(again) != NULL);
		CHECK(doca_dev_as_devinfo(dpu) == NULL);
		CHECK_CODE(doca_dev_close(dpu), DOCA_ERROR_INVALID_VALUE);
	/* NULL closes nothing (the header has no invalid-input error here; NVIDIA's
	 * dma_local_copy relies on it). */
	CHECK_CODE(doca_dev_close(NULL), DOCA_SUCCESS);
		CHECK_CODE(doca_pe_destroy((struct doca_pe *)again), DOCA_ERROR_INVALID_VALUE); /* another kind */
		{
			/* Opening an open device gives the same handle; a device in use is not closed. */
			struct doca_dev *same = NULL;
			struct doca_mmap *map;

			CHECK_CODE(open_dev("03:00.0", &same), DOCA_SUCCESS);
			CHECK(same == again);
			CHECK_CODE(doca_dev_close(same), DOCA_SUCCESS);
			CHECK(doca_dev_as_devinfo(again) != NULL); /* opened twice, closed once */
			CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
			CHECK_CODE(doca_mmap_add_dev(map, again), DOCA_SUCCESS);
			CHECK_CODE(doca_dev_close(again), DOCA_ERROR_IN_USE);
			CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
		}
		CHECK_CODE(doca_dev_close(again), DOCA_SUCCESS);
	}

	/* doca_pe.h */
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK(doca_pe_progress(pe) == 0);
	CHECK_CODE(doca_pe_get_num_inflight_tasks(pe, &inflight), DOCA_SUCCESS);
	CHECK(inflight == 0);
	CHECK_CODE(doca_pe_get_notification_handle(pe, &fd), DOCA_SUCCESS);
	CHECK(fd >= 0);
	CHECK_CODE(doca_pe_request_notification(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_clear_notification(pe, 0), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_pe_progress(NULL) == 0);

done:
	return checks_result();
}
