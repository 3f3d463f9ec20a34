package tripgen

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Sink is where the generator sends ticks: a socket or a Kafka topic.
type Sink interface {
	// Hello announces the stream's start time before any tick.
	Hello(startNs int64) error
	// Send queues one encoded tick (buffered; the slice is reused).
	Send(t *Tick, enc []byte) error
	// Flush pushes what was queued.
	Flush() error
	Close() error
}

// Run sends ticks [0, total) of s to sink on their schedule: whenever
// it wakes it sends every tick already due, flushes, and sleeps until the
// next one is due. When the sink cannot keep up (the consumer's queue is
// full and the socket's buffers with it), sends block and the stream falls
// behind; the ticks keep their due times, so the delay shows in the
// end-to-end latency rather than vanishing (no coordinated omission).
// It returns the number of ticks sent.
func Run(ctx context.Context, s *Stream, total uint64, sink Sink) (uint64, error) {
	if err := sink.Hello(s.StartNs); err != nil {
		return 0, fmt.Errorf("tripgen: hello: %w", err)
	}
	var i uint64
	enc := make([]byte, 0, WireSize)
	for i < total {
		if err := ctx.Err(); err != nil {
			return i, err
		}
		now := time.Now().UnixNano()
		due := uint64(0)
		if el := now - s.StartNs; el >= 0 {
			due = uint64(float64(el)*s.cfg.Rate/1e9) + 1
		}
		if due > total {
			due = total
		}
		for ; i < due; i++ {
			t := s.Tick(i)
			enc = t.Append(enc[:0])
			if err := sink.Send(&t, enc); err != nil {
				return i, fmt.Errorf("tripgen: send tick %d: %w", i, err)
			}
			// A long catch-up still flushes now and then, so the
			// consumer is not starved while the generator works through
			// a backlog.
			if i%4096 == 4095 {
				if err := sink.Flush(); err != nil {
					return i, fmt.Errorf("tripgen: flush: %w", err)
				}
			}
		}
		if err := sink.Flush(); err != nil {
			return i, fmt.Errorf("tripgen: flush: %w", err)
		}
		if i >= total {
			break
		}
		if wait := time.Duration(s.DueNs(i) - time.Now().UnixNano()); wait > 0 {
			select {
			case <-ctx.Done():
				return i, ctx.Err()
			case <-time.After(wait):
			}
		}
	}
	return i, nil
}

// Frames on the socket: a 4-byte little-endian length, then the payload.
// The first frame is the hello (8 bytes: the start time, Unix ns); every
// other frame is one tick (WireSize bytes).

// SocketSink writes length-prefixed frames to a connection.
type SocketSink struct {
	w *bufio.Writer
	c io.Closer
}

// NewSocketSink buffers writes to conn.
func NewSocketSink(conn io.WriteCloser) *SocketSink {
	return &SocketSink{w: bufio.NewWriterSize(conn, 64<<10), c: conn}
}

func (s *SocketSink) frame(p []byte) error {
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(p)))
	if _, err := s.w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := s.w.Write(p)
	return err
}

func (s *SocketSink) Hello(startNs int64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(startNs))
	if err := s.frame(b[:]); err != nil {
		return err
	}
	return s.w.Flush()
}

func (s *SocketSink) Send(_ *Tick, enc []byte) error { return s.frame(enc) }
func (s *SocketSink) Flush() error                   { return s.w.Flush() }
func (s *SocketSink) Close() error {
	err := s.w.Flush()
	if cerr := s.c.Close(); err == nil {
		err = cerr
	}
	return err
}

// MaxFrame bounds a frame's length: anything longer is a corrupt stream.
const MaxFrame = 1 << 16

// FrameReader reads the frames a SocketSink wrote.
type FrameReader struct {
	r   *bufio.Reader
	buf []byte
}

// NewFrameReader reads frames from r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), buf: make([]byte, MaxFrame)}
}

// Next returns the next frame's payload (valid until the next call), or
// io.EOF at a clean end of stream.
func (f *FrameReader) Next() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(f.r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("stream cut inside a frame header: %w", err)
		}
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("frame of %d bytes (more than %d): corrupt stream", n, MaxFrame)
	}
	if _, err := io.ReadFull(f.r, f.buf[:n]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("stream cut inside a frame: %w", err)
	}
	return f.buf[:n], nil
}

// ReadHello reads the first frame: the stream's start time.
func (f *FrameReader) ReadHello() (int64, error) {
	p, err := f.Next()
	if err != nil {
		return 0, err
	}
	if len(p) != 8 {
		return 0, fmt.Errorf("hello frame of %d bytes, want 8", len(p))
	}
	return int64(binary.LittleEndian.Uint64(p)), nil
}
