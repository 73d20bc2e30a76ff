/* A capability query that answers "no" is quiet, as DOCA's are (programs probe every device
 * with them); a create that needs the capability logs why it refuses. Run with a topology
 * that says `cap dma.memcpy 0`, `cap sha.hash 0` and `cap sha.partial_hash 0`: the program
 * prints "--- create ---" on standard error between the queries and the creates, so the
 * test can tell which part logged what. Prints "ok" when every check holds. */
#include <stdio.h>

#include "check.h"
#include <doca_dev.h>
#include <doca_dma.h>
#include <doca_error.h>
#include <doca_sha.h>

#include "open.h"

int main(void)
{
	struct doca_dev *dev = NULL;
	struct doca_dma *dma = NULL;
	struct doca_sha *sha = NULL;
	struct doca_devinfo **list;
	uint32_t n, i;

	CHECK_CODE(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
	for (i = 0; i < n; i++) {
		CHECK_CODE(doca_dma_cap_task_memcpy_is_supported(list[i]), DOCA_ERROR_NOT_SUPPORTED);
		CHECK_CODE(doca_sha_cap_task_hash_get_supported(list[i], DOCA_SHA_ALGORITHM_SHA256),
			   DOCA_ERROR_NOT_SUPPORTED);
	}
	doca_devinfo_destroy_list(list);
	fprintf(stderr, "--- create ---\n");
	fflush(stderr);
	CHECK_CODE(open_dev("b1:00.0", &dev), DOCA_SUCCESS);
	if (dev == NULL)
		return checks_result();
	CHECK_CODE(doca_dma_create(dev, &dma), DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_sha_create(dev, &sha), DOCA_ERROR_NOT_SUPPORTED);
	doca_dev_close(dev);
	return checks_result();
}
