package archive

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Export writes one WARC file of snapshots onto w: a warcinfo record, then
// each snapshot's records as stored (the gzip members copied byte for
// byte, so their digests still hold), a revisit's original before it, each
// range once. Standard WARC tools read the result.
func Export(ctx context.Context, store Store, name string, snapshots []watch.Snapshot, w io.Writer) error {
	info, err := warcinfo(name, "portalwatch archive export", time.Now().UTC())
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var head bytes.Buffer
	if err := writeMember(&head, info, nil); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if _, err := w.Write(head.Bytes()); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	type span struct {
		file string
		off  int64
	}
	written := map[span]bool{}
	copyRange := func(ref watch.SnapshotRef) error {
		key := span{ref.File, ref.Offset}
		if written[key] {
			return nil
		}
		written[key] = true
		rc, err := store.Open(ctx, ref.File, ref.Offset, ref.Length)
		if err != nil {
			return fmt.Errorf("export record %s: %w", ref.RecordID, err)
		}
		defer rc.Close()
		n, err := io.Copy(w, rc)
		if err != nil {
			return fmt.Errorf("export record %s: %w", ref.RecordID, err)
		}
		if n != ref.Length {
			return fmt.Errorf("export record %s: %w: %d of %d bytes in %s", ref.RecordID, ErrCorrupt, n, ref.Length, ref.File)
		}
		return nil
	}
	for _, s := range snapshots {
		if s.Original != nil {
			if err := copyRange(*s.Original); err != nil {
				return err
			}
		}
		if err := copyRange(s.Ref); err != nil {
			return err
		}
	}
	return nil
}
