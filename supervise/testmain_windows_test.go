package supervise

// The process tests need Unix (signals, process groups, a process table); on Windows the
// package's portable logic is tested (cmdline_test.go, procargs_test.go).
func runTestChildIfAsked() {}
