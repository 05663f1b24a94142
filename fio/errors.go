package fio

import (
	"errors"
	"fmt"
)

// ErrTruncated matches (errors.Is) every *TruncatedError: fio's output ended
// before the document it was writing was complete.
var ErrTruncated = errors.New("truncated fio output")

// ParseError is malformed input: Name is the file (as the caller named it),
// Line is 1-based, 0 when the position is not line-based.
type ParseError struct {
	Name string
	Line int
	Msg  string
	Err  error // underlying cause, if any
}

func (e *ParseError) Error() string {
	where := e.Name
	if where == "" {
		where = "<input>"
	}
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", where, e.Msg, e.Err)
	}
	return fmt.Sprintf("%s: %s", where, e.Msg)
}

func (e *ParseError) Unwrap() error { return e.Err }

// TruncatedError is fio output that stops early. For JSON results it means
// fio was killed (SIGKILL, OOM, a crashed host) while writing its report, or
// before writing it at all (Bytes == 0): fio writes its JSON only at the end
// of a run, and on SIGINT/SIGTERM it still finishes the report. Line is the
// 1-based line where the input stopped; Bytes how much was read (-1 when
// not counted).
type TruncatedError struct {
	Name  string
	Line  int
	Bytes int64
	What  string // what was being read, e.g. "JSON document"
}

func (e *TruncatedError) Error() string {
	name := e.Name
	if name == "" {
		name = "<input>"
	}
	switch {
	case e.Bytes == 0:
		return fmt.Sprintf("%s: truncated fio output: empty, no %s (fio killed before it wrote it?)", name, e.What)
	case e.Bytes < 0:
		return fmt.Sprintf("%s:%d: truncated fio output: %s (writer stopped mid-line?)", name, e.Line, e.What)
	}
	return fmt.Sprintf("%s:%d: truncated fio output: %s ends after %d bytes (fio killed while writing?)", name, e.Line, e.What, e.Bytes)
}

// Is makes errors.Is(err, ErrTruncated) true.
func (e *TruncatedError) Is(target error) bool { return target == ErrTruncated }
