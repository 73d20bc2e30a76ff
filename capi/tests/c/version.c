/* doca_version.h as DOCA's applications use it (common/src/utils.c's version callback) and as
 * code comparing versions at build time does: only doca_compat.h included, which brings it.
 * Prints the versions; the test compares them with the claimed one. */
#include <stdio.h>
#include <string.h>

#include <doca_compat.h>

#include "check.h"

_Static_assert(DOCA_VERSION_EQ_CURRENT(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH),
	       "the current version equals itself");
_Static_assert(DOCA_VERSION_LTE_CURRENT(2, 5, 0), "2.5 is not later than the claimed version");
_Static_assert(!DOCA_VERSION_LTE_CURRENT(DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR + 1, 0),
	       "the next minor is later");
_Static_assert(DOCA_VERSION_EXACT == DOCA_CURRENT_VERSION_NUM, "2.5's number is 2.6's exact one");
_Static_assert(DOCA_VERSION_NUM(DOCA_VER_MAJOR, DOCA_VER_MINOR, DOCA_VER_PATCH) == DOCA_VERSION_EXACT,
	       "2.5's names say the same version");

int main(void)
{
	CHECK(strcmp(doca_version(), DOCA_VERSION_STRING) == 0);
	CHECK(strcmp(doca_version_runtime(), DOCA_VER_STRING) == 0);
	printf("DOCA SDK     Version (Compilation): %s\n", doca_version());
	printf("DOCA Runtime Version (Runtime):     %s\n", doca_version_runtime());
	printf("numbers %d.%d.%d\n", DOCA_VERSION_MAJOR, DOCA_VERSION_MINOR, DOCA_VERSION_PATCH);
	return checks_result();
}
