/* doca_log.h and doca_argp.h as DOCA's samples use them: log backends, a registered source,
 * three parameters (string -p mandatory, int -n, boolean -b) parsed from the command line.
 * Prints the start result, the values, and log lines at every level (the test checks which
 * appear for the -l given). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <doca_argp.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_mmap.h>

#include "check.h"

DOCA_LOG_REGISTER(LOG_ARGP_TEST::MAIN);

struct config {
	char pci[16];
	int n;
	bool b;
	bool wf;
};

static doca_error_t pci_cb(void *param, void *config)
{
	struct config *c = config;
	const char *s = param;

	if (strlen(s) >= sizeof(c->pci))
		return DOCA_ERROR_INVALID_VALUE;
	strcpy(c->pci, s);
	return DOCA_SUCCESS;
}

static doca_error_t n_cb(void *param, void *config)
{
	((struct config *)config)->n = *(int *)param;
	return DOCA_SUCCESS;
}

static doca_error_t b_cb(void *param, void *config)
{
	((struct config *)config)->b = *(bool *)param;
	return DOCA_SUCCESS;
}

/* A switch with a two-letter short name, as DOCA's compress samples have (-wf). */
static doca_error_t wf_cb(void *param, void *config)
{
	((struct config *)config)->wf = *(bool *)param;
	return DOCA_SUCCESS;
}

static void add(const char *s, const char *l, const char *desc, doca_argp_param_cb_t cb, enum doca_argp_type t, int must)
{
	struct doca_argp_param *p;

	CHECK_CODE(doca_argp_param_create(&p), DOCA_SUCCESS);
	doca_argp_param_set_short_name(p, s);
	doca_argp_param_set_long_name(p, l);
	doca_argp_param_set_description(p, desc);
	doca_argp_param_set_callback(p, cb);
	doca_argp_param_set_type(p, t);
	if (must)
		doca_argp_param_set_mandatory(p);
	CHECK_CODE(doca_argp_register_param(p), DOCA_SUCCESS);
}

int main(int argc, char **argv)
{
	struct config cfg = {.pci = "", .n = 0, .b = false, .wf = false};
	struct doca_log_backend *sdk;
	struct doca_argp_param *bad;
	doca_error_t res;

	CHECK_CODE(doca_log_backend_create_standard(), DOCA_SUCCESS);
	CHECK_CODE(doca_log_backend_create_with_file_sdk(stderr, &sdk), DOCA_SUCCESS);
	CHECK_CODE(doca_log_backend_set_sdk_level(sdk, DOCA_LOG_LEVEL_WARNING), DOCA_SUCCESS);
	CHECK_CODE(doca_log_backend_set_sdk_level(sdk, 55), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_argp_param_create(&bad), DOCA_ERROR_BAD_STATE); /* before init */
	CHECK_CODE(doca_argp_init("log_argp", &cfg), DOCA_SUCCESS);
	CHECK_CODE(doca_argp_init("log_argp", &cfg), DOCA_ERROR_BAD_STATE);
	add("p", "pci-addr", "DOCA device PCI address", pci_cb, DOCA_ARGP_TYPE_STRING, 1);
	add("n", "count", "how many", n_cb, DOCA_ARGP_TYPE_INT, 0);
	add("b", "flag", "a switch", b_cb, DOCA_ARGP_TYPE_BOOLEAN, 0);
	add("wf", "with-frame", "a switch of two letters", wf_cb, DOCA_ARGP_TYPE_BOOLEAN, 0);
	add("ns", "num-src", "a short name of two letters, as DOCA's samples have", n_cb, DOCA_ARGP_TYPE_INT, 0);
	CHECK_CODE(doca_argp_param_create(&bad), DOCA_SUCCESS);
	doca_argp_param_set_long_name(bad, "no-description");
	CHECK_CODE(doca_argp_register_param(bad), DOCA_ERROR_INITIALIZATION);
	res = doca_argp_start(argc, argv);
	printf("start %s pci=%s n=%d b=%d\n", doca_error_get_name(res), cfg.pci, cfg.n, (int)cfg.b);
	printf("wf=%d\n", (int)cfg.wf);
	DOCA_LOG_CRIT("line at crit");
	DOCA_LOG_ERR("line at error %d", 30);
	DOCA_LOG_WARN("line at warning");
	DOCA_LOG_INFO("line at info");
	DOCA_LOG_DBG("line at debug");
	DOCA_LOG_TRC("line at trace");
	{
		/* A long line is written whole (dma_copy prints a 4000-byte message so). */
		static char long_text[4001];

		memset(long_text, 'x', sizeof(long_text) - 1);
		DOCA_LOG_INFO("long line %s end", long_text);
	}
	fflush(stdout);
	{
		/* The SDK level holds from the moment it is set: nothing at DISABLE, the error at ERROR. */
		struct doca_mmap *m;

		CHECK_CODE(doca_mmap_create(&m), DOCA_SUCCESS);
		CHECK_CODE(doca_log_backend_set_sdk_level(sdk, DOCA_LOG_LEVEL_DISABLE), DOCA_SUCCESS);
		fprintf(stderr, "sdk level now DISABLE\n");
		CHECK_CODE(doca_mmap_set_memrange(m, NULL, 64), DOCA_ERROR_INVALID_VALUE); /* logged: hidden */
		fprintf(stderr, "sdk level now ERROR\n");
		CHECK_CODE(doca_log_backend_set_sdk_level(sdk, DOCA_LOG_LEVEL_ERROR), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_start(m), DOCA_ERROR_BAD_STATE); /* no memory range */
		CHECK_CODE(doca_mmap_destroy(m), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_argp_destroy(), DOCA_SUCCESS);
	CHECK_CODE(doca_argp_destroy(), DOCA_ERROR_BAD_STATE);
	return checks_result();
}
