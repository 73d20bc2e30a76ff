/* doca-emu: the samples' argument parser (string, int and boolean parameters; -h, -v,
 * -l/--log-level, --sdk-log-level and -j/--json <file> built in). */
#ifndef DOCA_EMU_ARGP_H_
#define DOCA_EMU_ARGP_H_

#include "doca_compat.h"
#include "doca_error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum doca_argp_type {
	DOCA_ARGP_TYPE_UNKNOWN = 0,
	DOCA_ARGP_TYPE_STRING,
	DOCA_ARGP_TYPE_INT,
	DOCA_ARGP_TYPE_BOOLEAN,
	DOCA_ARGP_TYPE_JSON_OBJ,
};

struct doca_argp_param;

/* param: a C string (copy what you keep), an int * or a bool *; config: doca_argp_init's. */
typedef doca_error_t (*doca_argp_param_cb_t)(void *param, void *config);
/* config: doca_argp_init's, once every flag was parsed. */
typedef doca_error_t (*doca_argp_validation_cb_t)(void *config);

/* program_name NULL: argv[0]'s name. */
DOCA_EXPERIMENTAL doca_error_t doca_argp_init(const char *program_name, void *program_config);
DOCA_EXPERIMENTAL doca_error_t doca_argp_param_create(struct doca_argp_param **param);
DOCA_EXPERIMENTAL void doca_argp_param_set_short_name(struct doca_argp_param *param, const char *name);
DOCA_EXPERIMENTAL void doca_argp_param_set_long_name(struct doca_argp_param *param, const char *name);
DOCA_EXPERIMENTAL void doca_argp_param_set_arguments(struct doca_argp_param *param, const char *arguments);
DOCA_EXPERIMENTAL void doca_argp_param_set_description(struct doca_argp_param *param, const char *description);
DOCA_EXPERIMENTAL void doca_argp_param_set_callback(struct doca_argp_param *param, doca_argp_param_cb_t callback);
DOCA_EXPERIMENTAL void doca_argp_param_set_type(struct doca_argp_param *param, enum doca_argp_type type);
DOCA_EXPERIMENTAL void doca_argp_param_set_mandatory(struct doca_argp_param *param);
DOCA_EXPERIMENTAL void doca_argp_param_set_multiplicity(struct doca_argp_param *param);
DOCA_EXPERIMENTAL doca_error_t doca_argp_register_param(struct doca_argp_param *input_param);
/* -v runs it (param NULL) instead of printing the version; the program exits when it
 * returns DOCA_SUCCESS. */
DOCA_EXPERIMENTAL doca_error_t doca_argp_register_version_callback(doca_argp_param_cb_t callback);
DOCA_EXPERIMENTAL doca_error_t doca_argp_register_validation_callback(doca_argp_validation_cb_t callback);
DOCA_EXPERIMENTAL doca_error_t doca_argp_start(int argc, char **argv);
DOCA_EXPERIMENTAL doca_error_t doca_argp_destroy(void);

#ifdef __cplusplus
}
#endif

#endif
