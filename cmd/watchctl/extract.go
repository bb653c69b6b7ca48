package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"github.com/portalwatch/portalwatch/internal/article"
)

// extractCmd prints the article of one saved page as JSON.
type extractCmd struct {
	URL  string `name:"url" help:"The URL the page was fetched from (default: the canonical URL the page states)."`
	File string `arg:"" help:"The saved page, or - for standard input."`
}

func (ex *extractCmd) Run(c *cli) error {
	var in io.Reader = c.stdin
	if ex.File != "-" {
		f, err := os.Open(ex.File)
		if err != nil {
			return usagef("%v", err)
		}
		defer f.Close()
		in = f
	}
	// One byte over the cap, so that Extract reports the page too large.
	page, err := io.ReadAll(io.LimitReader(in, article.DefaultMaxBytes+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", ex.File, err)
	}
	if !utf8.Valid(page) {
		// A saved page is in its own charset: BOM, <meta charset>, or a guess.
		enc, _, _ := charset.DetermineEncoding(page, "text/html")
		if dec, err := enc.NewDecoder().Bytes(page); err == nil {
			page = dec
		}
	}
	var pageURL *url.URL
	if ex.URL != "" {
		if pageURL, err = url.Parse(ex.URL); err != nil {
			return usagef("--url %q: %v", ex.URL, err)
		}
	} else if pageURL = article.StatedURL(page); pageURL == nil {
		return usagef("%s states no canonical URL: give the one it was fetched from with --url", ex.File)
	}
	a, err := article.Extract(c.ctx, page, pageURL, article.Options{})
	if errors.Is(err, article.ErrBadURL) || errors.Is(err, article.ErrTooLarge) || errors.Is(err, article.ErrNoArticle) {
		return usagef("%s: %v", ex.File, err)
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(a)
}
