/* The side a program is built for: which DOCA_ARCH_* macros the build configuration gives
 * (through doca_dev.h alone, as DOCA's headers give them), and which devices the library
 * then lists. Prints "arch <host|dpu|any>", one "dev <pci>" line per device and
 * "list <error name>"; SDK errors go to stderr. */
#include <stdio.h>

#include <doca_dev.h>
#include <doca_log.h>

int main(void)
{
	struct doca_log_backend *sdk;
	struct doca_devinfo **list;
	char pci[DOCA_DEVINFO_PCI_ADDR_SIZE];
	uint32_t n, i;
	doca_error_t res;

#if defined(DOCA_ARCH_HOST)
	printf("arch host\n");
#elif defined(DOCA_ARCH_DPU)
	printf("arch dpu\n");
#else
	printf("arch any\n");
#endif
#if !defined(DOCA_ARCH_X86) && !defined(DOCA_ARCH_ARM) && (defined(__x86_64__) || defined(__aarch64__))
	printf("no cpu macro\n");
#endif
	if (doca_log_backend_create_with_file_sdk(stderr, &sdk) != DOCA_SUCCESS)
		return 1;
	res = doca_devinfo_create_list(&list, &n);
	if (res == DOCA_SUCCESS) {
		for (i = 0; i < n; i++)
			if (doca_devinfo_get_pci_addr_str(list[i], pci) == DOCA_SUCCESS)
				printf("dev %s\n", pci);
		doca_devinfo_destroy_list(list);
	}
	printf("list %s\n", doca_error_get_name(res));
	return 0;
}
