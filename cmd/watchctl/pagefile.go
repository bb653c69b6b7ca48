package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/portalwatch/portalwatch/internal/pagefile"
	"github.com/portalwatch/portalwatch/internal/watch"
)

type importCmd struct {
	File   string `arg:"" name:"file" type:"existingfile" help:"The list: CSV (header url,name,tags,interval,enabled,same_site,ignore,within,exclude,include_text,exclude_text,include_url,exclude_url,burst_detection,articles; only url is required; lists one item a line) or OPML."`
	Format string `enum:",csv,opml" default:"" help:"csv or opml (default: from the file's extension)."`
}

func (im *importCmd) Run(c *cli) error {
	format := im.Format
	if format == "" {
		var err error
		if format, err = pagefile.FormatOf(im.File); err != nil {
			return usagef("%v (--format csv|opml)", err)
		}
	}
	f, err := os.Open(im.File)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := pagefile.Read(f, format)
	if err != nil {
		return usagef("%s: %v", im.File, err)
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	existing, err := st.Pages(c.ctx)
	if err != nil {
		return err
	}
	registered := make(map[string]bool, len(existing))
	for _, p := range existing {
		registered[p.BaseURL] = true
	}
	specs, err := pagefile.Check(c.ctx, c.policy, rows, func(u string) bool { return registered[u] })
	var bad *pagefile.BadRowsError
	if errors.As(err, &bad) {
		return usagef("%s: %v", im.File, err)
	}
	if err != nil {
		return err
	}
	pages, err := st.CreatePages(c.ctx, specs)
	if errors.Is(err, watch.ErrDuplicatePage) {
		// Registered by someone else since the check above.
		return usagef("%s: %v; nothing imported", im.File, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "watching %d new pages (ids %d to %d)\n", len(pages), pages[0].ID, pages[len(pages)-1].ID)
	return nil
}

type exportCmd struct {
	Format string `enum:"csv,opml" default:"csv" help:"csv or opml (default csv)."`
}

func (ex *exportCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	pages, err := st.Pages(c.ctx)
	if err != nil {
		return err
	}
	if err := pagefile.Write(c.stdout, ex.Format, pages); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
