#!/bin/sh
# The module ran the core's self-tests when it was loaded; it is loaded.
grep -q '^seacache_core_selftest ' /proc/modules
