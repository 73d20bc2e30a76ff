/* doca-emu: logging as DOCA's samples use it. DOCA_LOG_REGISTER(name) once per file, then
 * DOCA_LOG_CRIT/ERR/WARN/INFO/DBG/TRC(format, ...). The application's lines go to standard
 * output in DOCA's format; the libraries' lines (the SDK level) to standard error. */
#ifndef DOCA_EMU_LOG_H_
#define DOCA_EMU_LOG_H_

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "doca_compat.h"
#include "doca_error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum doca_log_level {
	DOCA_LOG_LEVEL_DISABLE = 10,
	DOCA_LOG_LEVEL_CRIT = 20,
	DOCA_LOG_LEVEL_ERROR = 30,
	DOCA_LOG_LEVEL_WARNING = 40,
	DOCA_LOG_LEVEL_INFO = 50,
	DOCA_LOG_LEVEL_DEBUG = 60,
	DOCA_LOG_LEVEL_TRACE = 70,
};

struct doca_log_backend;

DOCA_EXPERIMENTAL doca_error_t doca_log_backend_create_standard(void);
/* The libraries' lines go to standard error whatever the file. */
DOCA_EXPERIMENTAL doca_error_t doca_log_backend_create_with_file_sdk(FILE *fptr, struct doca_log_backend **backend);
DOCA_EXPERIMENTAL doca_error_t doca_log_backend_set_sdk_level(struct doca_log_backend *backend, uint32_t level);
DOCA_EXPERIMENTAL doca_error_t doca_log_level_set_global_lower_limit(uint32_t level);
DOCA_EXPERIMENTAL uint32_t doca_log_level_get_global_lower_limit(void);
DOCA_EXPERIMENTAL doca_error_t doca_log_level_set_global_sdk_limit(uint32_t level);
DOCA_EXPERIMENTAL doca_error_t doca_log_register_source(const char *source_name, int *source);
DOCA_EXPERIMENTAL doca_error_t doca_log_unregister_source(int source);
/* One application line, formatted as printf does (DOCA_LOG_* call it). */
DOCA_EXPERIMENTAL doca_error_t doca_log(uint32_t level, int source, const char *fname, int line, const char *func,
					const char *format, ...) __attribute__((format(printf, 6, 7)));
/* The emulator's sink for one line already formatted (what doca_log calls; kept for objects
 * built with this library's earlier headers, whose doca_log was inline). */
doca_error_t doca_emu_log_write(uint32_t level, int source, const char *file, int line, const char *msg);

/* One per file; SOURCE may be any token sequence (samples write NAME::MAIN). */
#define DOCA_LOG_REGISTER(SOURCE)                                                          \
	static int log_source;                                                             \
	__attribute__((constructor)) static void doca_emu_log_register_source(void)        \
	{                                                                                  \
		doca_log_register_source(#SOURCE, &log_source);                            \
	}                                                                                  \
	__attribute__((destructor)) static void doca_emu_log_unregister_source(void)       \
	{                                                                                  \
		doca_log_unregister_source(log_source);                                    \
	}

#define DOCA_LOG(level, format, ...) \
	doca_log(DOCA_LOG_LEVEL_##level, log_source, __FILE__, __LINE__, __func__, format, ##__VA_ARGS__)
#define DOCA_LOG_CRIT(format, ...) DOCA_LOG(CRIT, format, ##__VA_ARGS__)
#define DOCA_LOG_ERR(format, ...) DOCA_LOG(ERROR, format, ##__VA_ARGS__)
#define DOCA_LOG_WARN(format, ...) DOCA_LOG(WARNING, format, ##__VA_ARGS__)
#define DOCA_LOG_INFO(format, ...) DOCA_LOG(INFO, format, ##__VA_ARGS__)
#define DOCA_LOG_DBG(format, ...) DOCA_LOG(DEBUG, format, ##__VA_ARGS__)
#define DOCA_LOG_TRC(format, ...) DOCA_LOG(TRACE, format, ##__VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
