/* strata/detail/link_check.h: a link error that says what to do when strata's implementation is
 * missing from a program, or compiled into it twice. C and C++ alike (strata/strata.h reads it).
 *
 * Every file that includes <strata/profiler.hpp> or <strata/strata.h> keeps one pointer to the
 * symbol below, and only strata's implementation (STRATA_IMPLEMENTATION) defines it, as a strong
 * symbol. So a program without the implementation fails to link with
 *
 *   undefined reference to `strata_link_error__define_STRATA_IMPLEMENTATION_in_one_cpp_file'
 *
 * among its undefined references, and a program that compiles it in two files fails with
 *
 *   multiple definition of `strata_link_error__define_STRATA_IMPLEMENTATION_in_one_cpp_file'
 *
 * first. The pointer is data, read by nothing: no scope, no call and no start-up code touches
 * it. The instrumentation header (<strata/strata.hpp>) does not include this: a program that
 * only records, with no session anywhere, still links and records nothing.
 */
#ifndef STRATA_CORE_LINK_CHECK_H
#define STRATA_CORE_LINK_CHECK_H

#ifdef __cplusplus
extern "C" {
#endif
/** Defined by strata's implementation only (strata/implementation.hpp). A function, not a
 * variable: g++ and clang both list a file's functions before its variables, so a doubled
 * implementation names this one first. */
void strata_link_error__define_STRATA_IMPLEMENTATION_in_one_cpp_file(void);
#ifdef __cplusplus
}
#endif

#if defined(__GNUC__) || defined(__clang__)
/* `used`: kept in every object file, so the reference reaches the linker even when nothing of
 * strata is called from the file. */
__attribute__((used)) static void (*const strata_detail_link_check)(void) =
    &strata_link_error__define_STRATA_IMPLEMENTATION_in_one_cpp_file;
#endif

#endif /* STRATA_CORE_LINK_CHECK_H */
