package watch

// RevisionFilter selects a page of one page's revisions, newest first.
type RevisionFilter struct {
	PageID int64
	// Before is the ID of the last revision of the previous call; 0 starts
	// with the newest.
	Before int64
	Limit  int // 1..MaxUpdatesLimit; 0 means 100
}

// LimitOrDefault returns f's Limit within 1..MaxUpdatesLimit, 100 for 0.
func (f RevisionFilter) LimitOrDefault() int { return limitOrDefault(f.Limit) }
