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
}
