package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/relayrt/relay/internal/filewatch"
)

// watchEvery is how often --watch looks at its file. A change is acted on once the file has
// stayed the same for one more look: an editor or a build may write it in several steps.
const watchEvery = 250 * time.Millisecond

// upgradeOn calls upgrade on each upgrade signal (SIGHUP, on Unix) and, when watch is set,
// each time the file it names changes (on every OS: it is looked at, not notified), one
// upgrade at a time: those asked for meanwhile become one more. It runs until ctx ends;
// the returned stop ends it and waits for it.
func upgradeOn(ctx context.Context, upgrade func(ctx context.Context, reason string) error, watch string, log *zap.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	asked := make(chan string, 1)
	ask := func(reason string) {
		select {
		case asked <- reason:
		default: // one is waiting already: it will see the newest file
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the upgrader: one upgrade at a time
		defer wg.Done()
		for {
			select {
			case reason := <-asked:
				if err := upgrade(ctx, reason); err != nil && ctx.Err() == nil {
					log.Error("upgrade failed", zap.String("reason", reason), zap.Error(err))
				} else if err == nil {
					log.Info("upgraded", zap.String("reason", reason))
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	if len(upgradeSignals) > 0 {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, upgradeSignals...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer signal.Stop(sig)
			for {
				select {
				case s := <-sig:
					ask(s.String())
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	if watch != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchFile(ctx, watch, func() { ask("--watch: " + watch + " changed") })
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// watchFile calls changed each time the file at path has changed and then stayed the same
// for one more look (see filewatch), until ctx ends.
func watchFile(ctx context.Context, path string, changed func()) {
	f := filewatch.New(path)
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if f.Look() {
				changed()
			}
		case <-ctx.Done():
			return
		}
	}
}
