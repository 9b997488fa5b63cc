/*
 * LD_PRELOAD shim of benches/peers/steps.py's "libcosim inline" engine: it makes
 * std::thread::hardware_concurrency() report one CPU.
 *
 * libcosim's fixed-step algorithm (the one libcosimc's cosim_execution_create and
 * cosim_fixed_step_algorithm_create make) sizes its thread pool as hardware_concurrency() - 1
 * worker threads when no count is given, and the C API (hence libcosimpy) gives none. With
 * zero worker threads the pool runs every submitted task inline, in the calling thread
 * (utility::thread_pool::submit), and wait_for_tasks_to_finish returns at once: the slaves
 * are stepped one after the other with no thread hand-off, libcosim's fastest mode.
 * libcosimc.so imports the symbol from libstdc++, so a preloaded definition wins.
 *
 * Build: gcc -O2 -shared -fPIC -o one_cpu.so one_cpu.c
 */

unsigned int _ZNSt6thread20hardware_concurrencyEv(void) { return 1; }
