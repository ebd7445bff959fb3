package main

import (
	"context"
	"os"
	"os/signal"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/internal/filewatch"
)

// watchEvery is how often --watch looks at its file. A change is acted on once the file has
// stayed the same for one more look: an editor or a build may write it in several steps.
const watchEvery = 250 * time.Millisecond

// hangups catches the upgrade signals (SIGHUP, on Unix; none elsewhere) from now on, for
// askedOn, so that one never ends relay; stop lets them go.
func hangups() (hup <-chan os.Signal, stop func()) {
	c := make(chan os.Signal, 1)
	if len(upgradeSignals) == 0 { // signal.Notify with no signal would relay every one
		return c, func() {}
	}
	signal.Notify(c, upgradeSignals...)
	return c, func() { signal.Stop(c) }
}

// askedOn calls do for each signal on hup and, when path is set and every positive, each
// time the file at path changes (looked at every that long; see filewatch), one at a time:
// a signal or a change that comes meanwhile is acted on once after it. It runs until ctx
// ends; the returned stop ends it and waits for it.
func askedOn(ctx context.Context, hup <-chan os.Signal, path string, every time.Duration, do func(ctx context.Context, reason string)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var tick <-chan time.Time
		var file *filewatch.File
		if path != "" && every > 0 {
			t := time.NewTicker(every)
			defer t.Stop()
			tick, file = t.C, filewatch.New(path)
		}
		for {
			var reason string
			select {
			case s := <-hup:
				reason = s.String()
			case <-tick:
				if !file.Look() {
					continue
				}
				reason = path + " changed"
			case <-ctx.Done():
				return
			}
			do(ctx, reason)
		}
	}()
	return func() { cancel(); <-done }
}

// upgradeOn upgrades on each upgrade signal and, when watch is set, each change of the file
// it names (see askedOn), logging each outcome; stop ends it and waits for it.
func upgradeOn(ctx context.Context, upgrade func(ctx context.Context, reason string) error, watch string, log *zap.Logger) (stop func()) {
	hup, stopHup := hangups()
	stopAsks := askedOn(ctx, hup, watch, watchEvery, func(ctx context.Context, reason string) {
		if err := upgrade(ctx, reason); err != nil && ctx.Err() == nil {
			log.Error("upgrade failed", zap.String("reason", reason), zap.Error(err))
		} else if err == nil {
			log.Info("upgraded", zap.String("reason", reason))
		}
	})
	return func() { stopAsks(); stopHup() }
}
