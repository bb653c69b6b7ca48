package main

import (
	"fmt"

	"github.com/portalwatch/portalwatch/internal/secrets"
)

// secretsCmd looks after the sealed values of secret request headers.
type secretsCmd struct {
	Reseal resealCmd `cmd:"" help:"Seal every stored secret header again with PORTALWATCH_SECRETS_KEY, opening each with the key that sealed it (PORTALWATCH_SECRETS_OLD_KEYS): the step before the old keys can go."`
}

type resealCmd struct{}

func (resealCmd) Run(c *cli) error {
	sealer, err := c.cfg.Secrets.Sealer()
	if err != nil {
		return usagef("%v", err)
	}
	if sealer == nil {
		return usagef("no PORTALWATCH_SECRETS_KEY: give the key that seals from now on, and the keys it replaces in PORTALWATCH_SECRETS_OLD_KEYS")
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.ResealSecrets(c.ctx, func(sealed string) bool { return secrets.Current(sealer, sealed) })
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "sealed %d values again on %d pages; %d were sealed with the current key already\n", rep.Resealed, rep.Pages, rep.Current)
	for _, f := range rep.Failed {
		fmt.Fprintf(c.stdout, "page %d, header %s: %s\n", f.PageID, f.Header, f.Err)
	}
	if len(rep.Failed) > 0 {
		return fmt.Errorf("%d values open with none of the keys: add the key that sealed them to PORTALWATCH_SECRETS_OLD_KEYS, or set them again (`watchctl set ID --header 'NAME: value'`)", len(rep.Failed))
	}
	fmt.Fprintln(c.stdout, "every stored secret is sealed with the current key: PORTALWATCH_SECRETS_OLD_KEYS can go once the jobs in flight are checked (a check interval)")
	return nil
}
