package pagefile

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// checker checks rows one at a time as Check and ReadChecked do: through
// registration, and against the rows before (a URL given twice). It
// remembers each URL's first row and the bad rows.
type checker struct {
	pol   registration.Policy
	first map[string]int // a normalised URL → the row it is first on
	bad   []RowError
}

func newChecker(pol registration.Policy) *checker {
	return &checker{pol: pol, first: map[string]int{}}
}

// refuse records a bad row, its message cut to maxErrorBytes.
func (c *checker) refuse(line int, err error) {
	c.bad = append(c.bad, RowError{Line: line, Err: shortError(err)})
}

// check returns row's page as registration admits it, or false when the
// row is bad (recorded), or an error when it could not be checked (a name
// lookup failed, ctx ended). The caller remembers a good page's URL, as it
// keeps it.
func (c *checker) check(ctx context.Context, row Row) (watch.PageSpec, bool, error) {
	if row.Err != nil {
		c.refuse(row.Line, row.Err)
		return watch.PageSpec{}, false, nil
	}
	p, err := c.pol.CheckPage(ctx, row.Page)
	var refused *watch.RefusedError
	switch {
	case errors.As(err, &refused):
		c.refuse(row.Line, err)
		return watch.PageSpec{}, false, nil
	case err != nil:
		return watch.PageSpec{}, false, fmt.Errorf("row %d: %w", row.Line, err)
	}
	if line, ok := c.first[p.URL]; ok {
		c.refuse(row.Line, fmt.Errorf("%s is also on row %d", p.URL, line))
		return watch.PageSpec{}, false, nil
	}
	return p, true, nil
}

// remember records that url is first on row line.
func (c *checker) remember(url string, line int) { c.first[url] = line }

// err returns a *BadRowsError naming every bad row in row order, or nil.
func (c *checker) err() error {
	if len(c.bad) == 0 {
		return nil
	}
	slices.SortStableFunc(c.bad, func(a, b RowError) int { return a.Line - b.Line })
	return &BadRowsError{Rows: c.bad}
}

// Check puts every row through pol (as watchctl add and the API do) and
// refuses rows whose URL is already registered (registered reports it) or
// given twice. It returns a *BadRowsError naming every bad row, or another
// error when a row could not be checked (a DNS failure, ctx ended).
func Check(ctx context.Context, pol registration.Policy, rows []Row, registered func(url string) bool) ([]watch.PageSpec, error) {
	c := newChecker(pol)
	var out []watch.PageSpec
	for _, row := range rows {
		p, ok, err := c.check(ctx, row)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		c.remember(p.URL, row.Line)
		if registered(p.URL) {
			c.refuse(row.Line, fmt.Errorf("%s is already watched", p.URL))
			continue
		}
		out = append(out, p)
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return out, nil
}
