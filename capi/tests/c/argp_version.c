/* doca_argp.h as DOCA 3.x samples use it: doca_argp_init(NULL, ...) (the program named after
 * argv[0]), a version callback and a validation callback, one int flag -n. A log line comes
 * before the parse, so that the order of log lines and the parser's text can be checked when
 * the output is piped. ARGP_CALLBACKS set: both callbacks registered; else the built-in -v. */
#include <stdio.h>
#include <stdlib.h>

#include <doca_argp.h>
#include <doca_error.h>
#include <doca_log.h>

#include "check.h"

DOCA_LOG_REGISTER(ARGP_VERSION);

struct config {
	int n;
	int validated;
};

static struct config cfg;

static doca_error_t n_cb(void *param, void *config)
{
	((struct config *)config)->n = *(int *)param;
	return DOCA_SUCCESS;
}

static doca_error_t version_cb(void *param, void *config)
{
	printf("version callback param=%s config=%s\n", param == NULL ? "NULL" : "set",
	       config == &cfg ? "ours" : "other");
	return DOCA_SUCCESS; /* the parser exits the program */
}

static doca_error_t validate_cb(void *config)
{
	struct config *c = config;

	c->validated = 1;
	return c->n > 10 ? DOCA_ERROR_INVALID_VALUE : DOCA_SUCCESS;
}

int main(int argc, char **argv)
{
	struct doca_argp_param *p;
	doca_error_t res;

	CHECK_CODE(doca_log_backend_create_standard(), DOCA_SUCCESS);
	CHECK_CODE(doca_argp_register_version_callback(version_cb), DOCA_ERROR_BAD_STATE); /* before init */
	CHECK_CODE(doca_argp_register_validation_callback(validate_cb), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_argp_init(NULL, &cfg), DOCA_SUCCESS);
	CHECK_CODE(doca_argp_register_version_callback(NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_argp_register_validation_callback(NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_argp_param_create(&p), DOCA_SUCCESS);
	doca_argp_param_set_short_name(p, "n");
	doca_argp_param_set_long_name(p, "count");
	doca_argp_param_set_description(p, "how many");
	doca_argp_param_set_callback(p, n_cb);
	doca_argp_param_set_type(p, DOCA_ARGP_TYPE_INT);
	CHECK_CODE(doca_argp_register_param(p), DOCA_SUCCESS);
	if (getenv("ARGP_CALLBACKS") != NULL) {
		CHECK_CODE(doca_argp_register_version_callback(version_cb), DOCA_SUCCESS);
		CHECK_CODE(doca_argp_register_validation_callback(validate_cb), DOCA_SUCCESS);
	}
	DOCA_LOG_INFO("before the parse");
	res = doca_argp_start(argc, argv);
	printf("start %s n=%d validated=%d\n", doca_error_get_name(res), cfg.n, cfg.validated);
	CHECK_CODE(doca_argp_destroy(), DOCA_SUCCESS);
	return checks_result();
}
