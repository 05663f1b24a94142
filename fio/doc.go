// Package fio is fiomig's view of the fio benchmark tool (fio 3.x): typed job
// files with the default migration workload, streaming parsers for fio's
// --output-format=json+ results, its per-I/O log files and the error and
// verify reports it prints on stderr, and the I/O-gap analysis that places
// fio's own stalls on a run's timeline.
//
// Shapes and units: log times are milliseconds on the log's own time axis
// (job start, or an absolute epoch with log_unix_epoch /
// log_alternate_epoch); latencies are nanoseconds; derived durations are
// seconds as float64. Every parser names the file (the name the caller gives)
// and the 1-based line of malformed input in its error (*ParseError); a JSON
// result that ends early — fio killed while writing, or killed before it
// wrote anything — is a *TruncatedError, which matches ErrTruncated.
//
// Imports: the standard library only. fio is a leaf of the import
// direction of docs/architecture.md (workload, sim, checks and reports import
// it). It never reads the wall clock or global randomness: running fio is
// workload's business.
package fio
