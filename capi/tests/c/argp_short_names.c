/* doca_argp.h with short names of several letters, as NVIDIA's samples register them ("ns",
 * "nd" in the AES-GCM and compress samples, "gid" and the switch "cm" in the RDMA ones): each
 * is given after one dash ("-ns 2"). A one-letter name "n" lives beside "ns" and "nd", so the
 * parser must prefer the whole name over "-n" with an attached value. Prints the start result
 * and every value. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <doca_argp.h>
#include <doca_error.h>

#include "check.h"

struct config {
	int n;
	int ns;
	int nd;
	char gid[16];
	bool cm;
};

static doca_error_t n_cb(void *param, void *config)
{
	((struct config *)config)->n = *(int *)param;
	return DOCA_SUCCESS;
}

static doca_error_t ns_cb(void *param, void *config)
{
	((struct config *)config)->ns = *(int *)param;
	return DOCA_SUCCESS;
}

static doca_error_t nd_cb(void *param, void *config)
{
	((struct config *)config)->nd = *(int *)param;
	return DOCA_SUCCESS;
}

static doca_error_t gid_cb(void *param, void *config)
{
	struct config *c = config;
	const char *s = param;

	if (strlen(s) >= sizeof(c->gid))
		return DOCA_ERROR_INVALID_VALUE;
	strcpy(c->gid, s);
	return DOCA_SUCCESS;
}

static doca_error_t cm_cb(void *param, void *config)
{
	((struct config *)config)->cm = *(bool *)param;
	return DOCA_SUCCESS;
}

static void add(const char *s, const char *l, doca_argp_param_cb_t cb, enum doca_argp_type t)
{
	struct doca_argp_param *p;

	CHECK_CODE(doca_argp_param_create(&p), DOCA_SUCCESS);
	doca_argp_param_set_short_name(p, s);
	doca_argp_param_set_long_name(p, l);
	doca_argp_param_set_description(p, l);
	doca_argp_param_set_callback(p, cb);
	doca_argp_param_set_type(p, t);
	CHECK_CODE(doca_argp_register_param(p), DOCA_SUCCESS);
}

int main(int argc, char **argv)
{
	struct config cfg = {0};
	doca_error_t res;

	CHECK_CODE(doca_argp_init("argp_short_names", &cfg), DOCA_SUCCESS);
	add("n", "count", n_cb, DOCA_ARGP_TYPE_INT);
	add("ns", "num-src-buf", ns_cb, DOCA_ARGP_TYPE_INT);
	add("nd", "num-dst-buf", nd_cb, DOCA_ARGP_TYPE_INT);
	add("gid", "gid-index", gid_cb, DOCA_ARGP_TYPE_STRING);
	add("cm", "use-rdma-cm", cm_cb, DOCA_ARGP_TYPE_BOOLEAN);
	res = doca_argp_start(argc, argv);
	printf("start %s n=%d ns=%d nd=%d gid=%s cm=%d\n", doca_error_get_name(res), cfg.n, cfg.ns, cfg.nd,
	       cfg.gid, cfg.cm);
	CHECK_CODE(doca_argp_destroy(), DOCA_SUCCESS);
	return checks_result();
}
