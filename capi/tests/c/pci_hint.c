/* Looks for the device at the PCI address given (argv[1]) the way DOCA's samples do: the
 * device list of this process's side, compared one by one. Prints "found" or "not found";
 * the test reads the library's one-time hint on standard error. */
#include <stdio.h>

#include "open.h"

int main(int argc, char **argv)
{
	struct doca_dev *dev = NULL;
	doca_error_t res;
	int round;

	if (argc < 2)
		return 2;
	/* Twice: the hint is given once. */
	for (round = 0; round < 2; round++) {
		res = open_dev(argv[1], &dev);
		if (res == DOCA_SUCCESS) {
			printf("found\n");
			return doca_dev_close(dev) == DOCA_SUCCESS ? 0 : 1;
		}
	}
	printf("not found (%s)\n", doca_error_get_name(res));
	return 0;
}
