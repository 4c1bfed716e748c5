# SPDX-License-Identifier: BSD-2-Clause
# seacache-sim: the system model (sim_model.c and the files of
# sim_model_int.h), sweeps and CSV (seacache_sim.c), on the trace readers
# (sim_trace) and the core's policies.
add_executable(seacache-sim seacache_sim.c sim_model.c sim_time.c
               sim_variant.c sim_host.c sim_server.c sim_cache.c sim_tables.c)
target_link_libraries(seacache-sim PRIVATE sim_trace seacache_dcache m)
