package store

import (
	"fmt"
	"strconv"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Watch health (migration 00020) is judged in the statement that records
// the check, so it moves with the check or not at all, and costs no query
// of its own: the page row the statement locks holds the last kept counts,
// and their median is of at most ten numbers.

// healthColumns are the columns of the locked page row that judge reads,
// renamed so that no SET entry of pages can mistake them for its own.
const healthColumns = `degraded AS was_degraded, kept_counts AS past_counts, ` + newer + ` AS health_newer`

// judge is a subquery of one row over row (a relation with healthColumns,
// as "p") for a check that kept kept links (an SQL int, NULL when the check
// read nothing to judge) and whose regions matched nothing when missed (an
// SQL text: the sentence saying so, or empty). Its columns: was_degraded;
// judged, true when the check is judged (it read the page and is newer than
// the last recorded check: a stale check or a redelivery judges nothing);
// reason and detail, the page's health after a judged check. The reasons
// go from the most specific: a region that matched nothing keeps no link
// either, and says why.
func judge(row, kept, missed string) string {
	return `
			SELECT p.was_degraded, p.health_newer AND ` + kept + ` IS NOT NULL AS judged, j.reason,
				CASE j.reason WHEN '` + string(watch.RegionEmpty) + `' THEN ` + missed + `
				              WHEN '` + string(watch.NoLinks) + `' THEN '` + watch.NoLinksDetail + `'
				              WHEN '` + string(watch.FewLinks) + `' THEN
				                  format('%s links where it usually has %s (median of its last %s checks)', ` + kept + `, round(j.usual), j.n)
				END AS detail
			FROM ` + row + `, LATERAL (
				SELECT CASE WHEN ` + missed + ` <> '' THEN '` + string(watch.RegionEmpty) + `'
				            WHEN ` + kept + ` = 0 THEN '` + string(watch.NoLinks) + `'
				            WHEN m.n >= ` + strconv.Itoa(watch.FewLinksHistory) + ` AND m.usual >= ` + strconv.Itoa(watch.FewLinksFloor) + `
				                 AND ` + kept + ` * ` + strconv.Itoa(watch.FewLinksShare) + ` < m.usual THEN '` + string(watch.FewLinks) + `'
				       END AS reason, m.usual, m.n
				FROM (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY c) AS usual, count(*) AS n FROM unnest(p.past_counts) c) m
			) j`
}

// healthSet is the SET entries of a successful check judged by the
// relation h (judge) with kept (the same SQL int). A degraded run keeps
// the time it began ($2 of its first check) while its reason changes; the
// kept counts keep the last watch.KeptHistory.
func healthSet(h, kept string) string {
	return `
				degraded        = CASE WHEN ` + h + `.judged THEN ` + h + `.reason ELSE degraded END,
				degraded_detail = CASE WHEN ` + h + `.judged THEN ` + h + `.detail ELSE degraded_detail END,
				degraded_since  = CASE WHEN NOT ` + h + `.judged THEN degraded_since
				                       WHEN ` + h + `.reason IS NULL THEN NULL ELSE coalesce(degraded_since, $2) END,
				kept_counts     = CASE WHEN ` + h + `.judged
				                       THEN (kept_counts || ` + kept + `)[greatest(1, cardinality(kept_counts) - ` + strconv.Itoa(watch.KeptHistory-2) + `):]
				                       ELSE kept_counts END`
}

// healthReturning is the RETURNING columns that healthScan reads, for the
// judging relation h.
func healthReturning(h string) string {
	return h + `.was_degraded AS h_was, degraded AS h_reason, coalesce(degraded_detail, '') AS h_detail, degraded_since AS h_since`
}

// healthSelected is healthReturning's columns read off the relation r that
// returned them.
func healthSelected(r string) string {
	return r + `.h_was, ` + r + `.h_reason, ` + r + `.h_detail, ` + r + `.h_since`
}

// healthArgs returns the parameters kept and missed of judge for the check
// c: NULL and empty when it has no Reading.
func healthArgs(c watch.Check) (kept any, missed string) {
	r := c.Reading
	if r == nil {
		return nil, ""
	}
	if len(r.MissedRegions) > 0 {
		missed = watch.RegionDetail(r.MissedRegions)
	}
	return int32(min(r.Kept, 1<<31-1)), missed
}

// healthScan holds the destinations of healthReturning.
type healthScan struct {
	was, reason *string
	detail      string
	since       *time.Time
}

func (h *healthScan) dest() []any { return []any{&h.was, &h.reason, &h.detail, &h.since} }

// into sets rec's Health and Changed.
func (h *healthScan) into(rec *watch.Recorded) {
	rec.Health, rec.Changed = watch.Health{}, (h.was == nil) != (h.reason == nil)
	if h.reason != nil {
		rec.Health.Reason, rec.Health.Detail = watch.Degradation(*h.reason), h.detail
	}
	if h.since != nil {
		rec.Health.Since = *h.since
	}
}

// param returns the placeholder of the n-th argument.
func param(n int) string { return fmt.Sprintf("$%d", n) }
