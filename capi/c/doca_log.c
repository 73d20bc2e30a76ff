/* doca-emu: the C half of doca_log(). C variadic arguments can only be read by C (Rust's
 * C-variadic functions are not stable), so the exported `doca_log` (capi/src/log.rs) is a
 * one-instruction trampoline that jumps here with the caller's registers and stack intact;
 * this function formats the line and hands it to the Rust sink. Hidden: the library exports
 * `doca_log` only. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The Rust sink and level (capi/src/log.rs). */
extern int doca_emu_log_write(uint32_t level, int source, const char *file, int line, const char *msg);
extern uint32_t doca_log_level_get_global_lower_limit(void);

#define EMU_DOCA_SUCCESS 0
#define EMU_DOCA_ERROR_INVALID_VALUE 6
/* A line up to this size is formatted on the stack; a longer one in a buffer of its size
 * (DOCA's own library writes the whole line, however long: a sample may print a 4000-byte
 * message). */
#define EMU_LOG_LINE_MAX 1024

__attribute__((visibility("hidden"), format(printf, 6, 7))) int
doca_emu_log_format(uint32_t level, int source, const char *fname, int line, const char *func, const char *format, ...)
{
	char msg[EMU_LOG_LINE_MAX];
	char *big;
	va_list ap, again;
	int need, ret;

	(void)func;
	if (format == NULL)
		return EMU_DOCA_ERROR_INVALID_VALUE;
	if (level > doca_log_level_get_global_lower_limit())
		return EMU_DOCA_SUCCESS;
	va_start(ap, format);
	va_copy(again, ap);
	need = vsnprintf(msg, sizeof(msg), format, ap);
	va_end(ap);
	if (need < (int)sizeof(msg) || (big = malloc((size_t)need + 1)) == NULL) {
		/* Fits (or no memory for more: the line as cut). */
		va_end(again);
		return doca_emu_log_write(level, source, fname, line, msg);
	}
	vsnprintf(big, (size_t)need + 1, format, again);
	va_end(again);
	ret = doca_emu_log_write(level, source, fname, line, big);
	free(big);
	return ret;
}
