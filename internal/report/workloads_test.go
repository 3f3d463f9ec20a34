package report

// The report's tests render runs of the built-in workloads, whose tables
// and headlines their own packages register.
import _ "storebench/internal/workload/all"
