package fio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Direction is an I/O's data direction as fio logs it.
type Direction uint8

// fio's log directions (fio HOWTO "Log File Formats").
const (
	Read  Direction = 0
	Write Direction = 1
	Trim  Direction = 2
)

func (d Direction) String() string {
	switch d {
	case Read:
		return "read"
	case Write:
		return "write"
	case Trim:
		return "trim"
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

// LogEntry is one line of a fio log file (fio iolog.c flush_samples):
// "time, value, direction, block size[, offset], priority".
type LogEntry struct {
	// TimeMs is when the I/O completed (for per-I/O logs; the window's end
	// for windowed logs), ms since the job started, or since the Unix epoch
	// with log_unix_epoch, or of log_alternate_epoch_clock_id's clock.
	TimeMs int64
	// Value is the latency in ns for latency logs (_lat, _clat, _slat),
	// KiB/s for bandwidth logs, I/Os per second for IOPS logs.
	Value int64
	Dir   Direction
	// BlockSize is the I/O size in bytes (0 in windowed logs).
	BlockSize int64
	// Offset is the I/O's byte offset in the file (log_offset=1), -1 when the
	// log has no offsets.
	Offset int64
	// Prio is the priority column: 1 for a real-time class I/O and 0
	// otherwise, or the raw ioprio value when fio printed it in hex
	// (log_prio=1, "0x%04x").
	Prio uint32
}

// LogReader reads a fio log file line by line without holding it in
// memory: for r.Scan() { e := r.Entry() }; then r.Err(). Every line must
// have the number of columns of the first one (fio writes a file in one
// format). Column counts: 4 = time, value, dir, bs (old fio); 5 = time,
// value, dir, bs, prio (fio 3.x without log_offset) — or time, value, dir,
// bs, offset for old fio with log_offset, see LegacyOffsets; 6 = time, value,
// dir, bs, offset, prio. Blank lines are skipped.
type LogReader struct {
	// LegacyOffsets reads a 5-column log as time, value, dir, bs, offset:
	// logs of a fio that did not log priorities yet, with log_offset=1.
	LegacyOffsets bool

	name    string
	br      *bufio.Reader
	line    int
	columns int
	entry   LogEntry
	err     error
}

// NewLogReader reads a fio log from r; name (the file) is used in errors.
func NewLogReader(r io.Reader, name string) *LogReader {
	return &LogReader{name: name, br: bufio.NewReaderSize(r, 256<<10)}
}

// Entry is the entry the last successful Scan read.
func (lr *LogReader) Entry() LogEntry { return lr.entry }

// Line is the 1-based line number of the last line read.
func (lr *LogReader) Line() int { return lr.line }

// Err is the first error Scan met: nil at a clean end of input, a
// *ParseError naming file and line for a malformed line, or a
// *TruncatedError when the last line has no newline (fio always ends its
// lines; a missing one means the writer was stopped mid-line, and that line
// is not returned).
func (lr *LogReader) Err() error { return lr.err }

// Scan reads the next entry; false at the end of input or on an error.
func (lr *LogReader) Scan() bool {
	if lr.err != nil {
		return false
	}
	for {
		b, err := lr.br.ReadSlice('\n')
		if len(b) == 0 && err != nil {
			if !errors.Is(err, io.EOF) {
				lr.err = &ParseError{Name: lr.name, Line: lr.line + 1, Msg: "reading", Err: err}
			}
			return false
		}
		lr.line++
		if errors.Is(err, bufio.ErrBufferFull) {
			lr.err = &ParseError{Name: lr.name, Line: lr.line, Msg: fmt.Sprintf("line longer than %d bytes", lr.br.Size())}
			return false
		}
		if err != nil { // io.EOF (or a read error) after a line without '\n'
			if errors.Is(err, io.EOF) {
				lr.err = &TruncatedError{Name: lr.name, Line: lr.line, Bytes: -1, What: "log line without newline"}
			} else {
				lr.err = &ParseError{Name: lr.name, Line: lr.line, Msg: "reading", Err: err}
			}
			return false
		}
		if perr := lr.parse(b); perr != "" {
			if perr == "blank" {
				continue
			}
			lr.err = &ParseError{Name: lr.name, Line: lr.line, Msg: perr + ": " + quoteLine(b)}
			return false
		}
		return true
	}
}

func quoteLine(b []byte) string {
	b = bytes.TrimRight(b, "\r\n")
	if len(b) > 80 {
		return fmt.Sprintf("%q...", b[:80])
	}
	return fmt.Sprintf("%q", b)
}

// parse fills lr.entry from one line; it returns "" or what is wrong.
func (lr *LogReader) parse(b []byte) string {
	var f [7]int64
	n := 0
	i := 0
	end := len(b)
	for end > 0 && (b[end-1] == '\n' || b[end-1] == '\r') {
		end--
	}
	for {
		for i < end && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		if i == end {
			if n == 0 {
				return "blank"
			}
			return fmt.Sprintf("empty column %d", n+1)
		}
		if n == len(f) {
			return fmt.Sprintf("more than %d columns", len(f)-1)
		}
		v, j, ok := parseNum(b, i, end, n)
		if !ok {
			return fmt.Sprintf("column %d is not a number", n+1)
		}
		f[n] = v
		n++
		i = j
		for i < end && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		if i == end {
			break
		}
		if b[i] != ',' {
			return fmt.Sprintf("column %d is not a number", n)
		}
		i++
	}
	if lr.columns == 0 {
		if n < 4 || n > 6 {
			return fmt.Sprintf("%d columns, a fio log has 4 to 6 (time, value, direction, block size[, offset], priority)", n)
		}
		lr.columns = n
	} else if n != lr.columns {
		return fmt.Sprintf("%d columns, earlier lines have %d", n, lr.columns)
	}
	e := LogEntry{TimeMs: f[0], Value: f[1], BlockSize: f[3], Offset: -1}
	if f[2] < 0 || f[2] > 2 {
		return fmt.Sprintf("direction %d is not 0 (read), 1 (write) or 2 (trim)", f[2])
	}
	e.Dir = Direction(f[2])
	switch {
	case n == 5 && lr.LegacyOffsets:
		e.Offset = f[4]
	case n == 5:
		e.Prio = uint32(f[4])
	case n == 6:
		e.Offset, e.Prio = f[4], uint32(f[5])
	}
	if e.TimeMs < 0 || e.BlockSize < 0 || e.Offset < -1 {
		return "negative time, block size or offset"
	}
	lr.entry = e
	return ""
}

// parseNum parses a decimal integer (a leading '-' only in the value
// column 1) or a 0x-prefixed hex one at b[i:end]; it returns the value and
// the index after it.
func parseNum(b []byte, i, end, col int) (int64, int, bool) {
	neg := false
	if col == 1 && i < end && b[i] == '-' {
		neg = true
		i++
	}
	if i+1 < end && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X') {
		i += 2
		start := i
		var v uint64
		for i < end {
			c := b[i]
			var d byte
			switch {
			case c >= '0' && c <= '9':
				d = c - '0'
			case c >= 'a' && c <= 'f':
				d = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				d = c - 'A' + 10
			default:
				goto doneHex
			}
			if v > (1<<63-1)>>4 {
				return 0, i, false
			}
			v = v<<4 | uint64(d)
			i++
		}
	doneHex:
		if i == start {
			return 0, i, false
		}
		if neg {
			return -int64(v), i, true
		}
		return int64(v), i, true
	}
	start := i
	var v int64
	for i < end && b[i] >= '0' && b[i] <= '9' {
		if v > (1<<63-1-9)/10 {
			return 0, i, false
		}
		v = v*10 + int64(b[i]-'0')
		i++
	}
	if i == start {
		return 0, i, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}
