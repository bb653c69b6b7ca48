package watch

import "time"

// Removal is a link that left its page: absent for the removal count of
// successful checks in a row (PORTALWATCH_REMOVAL_CHECKS). It is recorded
// once per absence; the link stays known, so if it comes back it is not
// reported as new.
type Removal struct {
	ID        int64     `json:"id"`
	PageID    int64     `json:"page_id"`
	URL       string    `json:"url"`
	Text      string    `json:"text"`
	RemovedAt time.Time `json:"removed_at"`
	// DwellSeconds is the link's time on the page, from its first sighting
	// to this removal (DwellSeconds); nil when its first sighting is no
	// longer kept (links' retention pruned the link).
	DwellSeconds *int64 `json:"dwell_seconds,omitempty"`
	// SnapshotID is the archived page the removal is shown with: the
	// page as the check that made it due read it. Nil when the archive
	// was off, or retention has deleted the snapshot since.
	SnapshotID *int64 `json:"snapshot_id,omitempty"`
}

// RemovalFilter selects removals, newest first.
type RemovalFilter struct {
	PageID int64     // 0: every page
	Since  time.Time // zero: any time (inclusive)
	Limit  int       // 1..MaxUpdatesLimit; 0 means 100
}

// LimitOrDefault returns f's Limit within 1..MaxUpdatesLimit, 100 for 0.
func (f RemovalFilter) LimitOrDefault() int { return limitOrDefault(f.Limit) }
