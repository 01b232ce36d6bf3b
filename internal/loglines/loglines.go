// Package loglines reads the lines of a log (an access log, k6's JSON
// output), gzipped or not, each bounded in length, and says how the input
// ended: a gzip stream cut short (its writer killed) is read up to the
// cut, with the cut said, never as an error.
package loglines

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest line returned: 64 KiB. A longer line is skipped
// and counted ([Reader.TooLong]).
const MaxLine = 64 << 10

// Reader reads lines. Its lines are numbered from 1, skipped ones too.
type Reader struct {
	br      *bufio.Reader
	gz      *gzip.Reader
	line    int64
	tooLong int64
	// ended says whether the last line returned had its newline.
	ended bool
	cut   error
	err   error
}

// New returns a Reader of in, gunzipping it when it starts with gzip's
// magic bytes.
func New(in io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(in, 2*MaxLine)
	r := &Reader{br: br, ended: true}
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r.gz = gz
		r.br = bufio.NewReaderSize(gz, 2*MaxLine)
	}
	return r, nil
}

// Next returns the next line, without its newline (nor a carriage return
// before it), valid until the next call; ok is false at the end (then see
// [Reader.Err] and [Reader.Cut]).
func (r *Reader) Next() (line []byte, ok bool) {
	for {
		b, err := r.br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			r.skipLine()
			continue
		case err != nil && !errors.Is(err, io.EOF):
			r.fail(err)
			if len(b) == 0 {
				return nil, false
			}
		case err != nil && len(b) == 0:
			return nil, false
		}
		r.line++
		r.ended = err == nil
		b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\r'})
		if len(b) > MaxLine {
			r.tooLong++
			continue
		}
		return b, true
	}
}

// skipLine passes over the rest of a line longer than the buffer.
func (r *Reader) skipLine() {
	r.line++
	r.tooLong++
	for {
		_, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			r.fail(err)
		}
		r.ended = err == nil
		return
	}
}

// fail records how the input ended early: a gzip stream cut short is a
// cut, any other error an error.
func (r *Reader) fail(err error) {
	if r.gz != nil && errors.Is(err, io.ErrUnexpectedEOF) {
		r.cut = errors.New("the gzip stream ends before its end (its writer was stopped: the lines up to the cut are read)")
		return
	}
	if r.err == nil {
		r.err = err
	}
}

// Line is the number of the line Next returned last.
func (r *Reader) Line() int64 { return r.line }

// TooLong is how many lines longer than MaxLine were skipped.
func (r *Reader) TooLong() int64 { return r.tooLong }

// Unterminated reports whether the last line returned ended without its
// newline: the input may have been cut in its middle.
func (r *Reader) Unterminated() bool { return !r.ended }

// Cut says why the input ended before its end (nil when it did not): a
// gzip stream cut short.
func (r *Reader) Cut() error { return r.cut }

// Err is the error that stopped the reading (nil at a clean end or a
// cut).
func (r *Reader) Err() error { return r.err }
