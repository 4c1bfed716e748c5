# SPDX-License-Identifier: BSD-2-Clause
# seacache-sim: the system model, sweeps and CSV (sim_model.c,
# seacache_sim.c), on the trace readers (sim_trace) and the core's policies.
add_executable(seacache-sim seacache_sim.c sim_model.c)
target_link_libraries(seacache-sim PRIVATE sim_trace seacache_dcache m)
