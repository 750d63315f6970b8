/*
 * @brief The real dlclose(), past our own exported one (lifecycle.c), for the handles the tracer
 * opens itself (libcuda, libcudart and loaded objects looked up with RTLD_NOLOAD, NVML).
 */
#ifndef GMT_CAPTURE_DLCLOSE_H
#define GMT_CAPTURE_DLCLOSE_H

/** dlclose() without our interposition; -1 when glibc's cannot be found. */
int gmt_real_dlclose(void *handle);

#endif
