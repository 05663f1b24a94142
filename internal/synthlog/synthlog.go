package synthlog

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// Write writes n log lines with the given number of columns to w: 4 (time,
// value, direction, block size — the format fio's fiologparser.py reads),
// 5 (… priority) or 6 (… offset, priority; fio 3.33 with log_offset=1).
// Times are ms since the job started.
func Write(w io.Writer, n int, columns int, seed uint64) error {
	if columns < 4 || columns > 6 {
		return fmt.Errorf("synthlog: %d columns, want 4, 5 or 6", columns)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	x := seed | 1
	next := func() uint64 { x = x*6364136223846793005 + 1442695040888963407; return x >> 33 }
	var line []byte
	var us int64 // µs since start
	for i := 0; i < n; i++ {
		us += 200 + int64(next()%260) // ~3000 IOPS
		dir := 0
		if next()%100 >= 70 {
			dir = 1
		}
		line = line[:0]
		line = strconv.AppendInt(line, us/1000, 10)
		line = append(line, ", "...)
		line = strconv.AppendInt(line, 20_000+int64(next()%480_000), 10)
		line = append(line, ", "...)
		line = strconv.AppendInt(line, int64(dir), 10)
		line = append(line, ", 4096"...)
		if columns == 6 {
			line = append(line, ", "...)
			line = strconv.AppendInt(line, int64(next()%262144)*4096, 10)
		}
		if columns >= 5 {
			line = append(line, ", 0"...)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}
