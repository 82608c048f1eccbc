/* A tiny test harness in the manner of libuv's: one process per test program, CHECK
 * macros that print both values and the location, and a non-zero exit on failure. */
#ifndef KP_TEST_H
#define KP_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;

#define CHECK(cond)                                                                                                    \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                       \
			test_failures++;                                                                               \
		}                                                                                                      \
	} while (0)

#define CHECK_EQ(a, b)                                                                                                 \
	do {                                                                                                           \
		long long va_ = (long long)(a), vb_ = (long long)(b);                                                  \
		if (va_ != vb_) {                                                                                      \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__, __LINE__, #a,    \
				va_, #b, vb_);                                                                         \
			test_failures++;                                                                               \
		}                                                                                                      \
	} while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                                                \
	do {                                                                                                           \
		if (!strstr((hay), (needle))) {                                                                        \
			fprintf(stderr, "%s:%d: expected \"%s\" in:\n%s\n", __FILE__, __LINE__, (needle), (hay));      \
			test_failures++;                                                                               \
		}                                                                                                      \
	} while (0)

#define CHECK_STR_EQ(a, b)                                                                                             \
	do {                                                                                                           \
		const char *sa_ = (a), *sb_ = (b);                                                                     \
		if (strcmp(sa_, sb_) != 0) {                                                                           \
			fprintf(stderr, "%s:%d: CHECK_STR_EQ failed: %s == \"%s\", %s == \"%s\"\n", __FILE__,          \
				__LINE__, #a, sa_, #b, sb_);                                                           \
			test_failures++;                                                                               \
		}                                                                                                      \
	} while (0)

#define RUN(fn)                                                                                                        \
	do {                                                                                                           \
		int before_ = test_failures;                                                                           \
		fn();                                                                                                  \
		fprintf(stderr, "%s %s\n", test_failures == before_ ? "ok  " : "FAIL", #fn);                           \
	} while (0)

#define TEST_EXIT() (test_failures ? (fprintf(stderr, "%d check(s) failed\n", test_failures), 1) : 0)

#endif
