// Command logscan is the driver for measuring the fio log parser's peak
// memory (/usr/bin/time -v) outside the test binary:
//
//	logscan -generate 10000000 -columns 4 big.log   # write a synthetic log
//	logscan big.log                                 # stream it through fio.AnalyzeLogFile
//
// Imports: the standard library, fio and internal/synthlog (test and
// measurement support, under internal/ with the other test support).
package main
