package queue

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sync"
)

// gzipEncoding is the AMQP content-encoding of a compressed body.
const gzipEncoding = "gzip"

// maxInflated bounds a decompressed body, so a hostile message cannot
// exhaust a consumer's memory.
const maxInflated = 64 << 20

// compressor compresses bodies with gzip at its fastest level, reusing
// writers: a task is mostly URLs sharing a host, which shrink several times
// over, and the broker writes every byte of a persistent message to disk.
type compressor struct {
	writers sync.Pool
}

func (c *compressor) compress(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body) / 4)
	zw, _ := c.writers.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	} else {
		zw.Reset(&buf)
	}
	defer c.writers.Put(zw)
	if _, err := zw.Write(body); err != nil {
		return nil, fmt.Errorf("compress message: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress message: %w", err)
	}
	return buf.Bytes(), nil
}

// inflate returns body decoded from contentEncoding ("" or "gzip").
func inflate(body []byte, contentEncoding string) ([]byte, error) {
	switch contentEncoding {
	case "", "identity":
		return body, nil
	case gzipEncoding:
	default:
		return nil, fmt.Errorf("message has unknown content encoding %q", contentEncoding)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("decompress message: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxInflated+1))
	if err != nil {
		return nil, fmt.Errorf("decompress message: %w", err)
	}
	if len(out) > maxInflated {
		return nil, errors.New("decompressed message larger than 64 MiB")
	}
	return out, nil
}
