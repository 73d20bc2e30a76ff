/* A program that never creates a log backend and makes a call the library refuses: the
 * library's error line reaches standard error anyway (unless DOCA_EMU_SDK_STDERR=0), so a
 * refused call never shows only its code. Prints the code on standard output. */
#include <stdio.h>

#include <doca_cc.h>
#include <doca_error.h>

int main(void)
{
	struct doca_cc_server *server = NULL;

	doca_error_t r = doca_cc_server_create(NULL, NULL, "no-device", &server);
	printf("%s\n", doca_error_get_name(r));
	return r == DOCA_ERROR_INVALID_VALUE ? 0 : 1;
}
