package main

import (
	"errors"
	"fmt"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// tokenCmd manages the bearer tokens of the web program's API and feeds.
type tokenCmd struct {
	Create tokenCreateCmd `cmd:"" help:"Make a token and print it once (only its hash is stored)."`
	List   tokenListCmd   `cmd:"" help:"List the tokens: name, rights, created, last used."`
	Revoke tokenRevokeCmd `cmd:"" help:"Delete a token; requests that carry it are refused from now on."`
}

func checkTokenName(name string) error {
	if err := watch.CheckTokenName(name); err != nil {
		return usagef("%v", err)
	}
	return nil
}

type tokenCreateCmd struct {
	Name  string `arg:"" name:"name" help:"What the token is for (unique): 1 to 64 letters, digits, '_', '.', '-'."`
	Write bool   `name:"write" help:"Let the token change pages, not only read them."`
}

func (t *tokenCreateCmd) Run(c *cli) error {
	if err := checkTokenName(t.Name); err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	secret := watch.NewTokenSecret()
	if _, err := st.CreateToken(c.ctx, t.Name, secret, t.Write); errors.Is(err, watch.ErrDuplicateToken) {
		return usagef("a token named %q exists (see `watchctl token list`; revoke it first to replace it)", t.Name)
	} else if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, secret)
	return nil
}

type tokenListCmd struct{}

func (tokenListCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	tokens, err := st.Tokens(c.ctx)
	if err != nil {
		return err
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "NAME\tRIGHTS\tCREATED\tLAST USED")
	for _, t := range tokens {
		rights, used := "read", "never"
		if t.Write {
			rights = "read, write"
		}
		if !t.LastUsedAt.IsZero() {
			used = t.LastUsedAt.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, rights, t.CreatedAt.Local().Format("2006-01-02 15:04:05"), used)
	}
	return tw.Flush()
}

type tokenRevokeCmd struct {
	Name string `arg:"" name:"name" help:"The token's name (see watchctl token list)."`
}

func (t *tokenRevokeCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RevokeToken(c.ctx, t.Name); errors.Is(err, watch.ErrTokenNotFound) {
		return usagef("no token is named %q (see `watchctl token list`)", t.Name)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "revoked token %s\n", t.Name)
	return nil
}
