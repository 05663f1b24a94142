// Package synthlog writes synthetic fio per-I/O latency logs in fio 3.x's
// format, for benchmarks and the logscan driver: a deterministic stream
// (seeded linear congruential generator, no global randomness, no clock) of
// 4 KiB I/Os at about 3000 IOPS, 70 % reads, latencies of 20-500 µs.
//
// Imports: the standard library only.
package synthlog
