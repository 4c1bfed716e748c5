# SPDX-License-Identifier: BSD-2-Clause
"""The numbers of the lab, fsal-bench and the simulator's plots: CSVs read
by column name, one median, the lab's report.md and the charts (gnuplot).
The shell scripts keep the orchestration and call tools/report/seacache-report."""
