// Command lintel-ferretdb serves the MongoDB wire protocol for Lintel's tests
// and local development. It embeds FerretDB 1.x (the embeddable
// github.com/FerretDB/FerretDB/ferretdb package), which stores documents in
// PostgreSQL (default) or SQLite.
//
// tools/stack builds it and starts it as:
//
//	lintel-ferretdb -listen 127.0.0.1:57017 -handler postgresql \
//	    -postgresql-url postgres://lintel@127.0.0.1:55432/ferretdb
//
// It stops cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:57017", "TCP address to listen on")
	handler := flag.String("handler", "postgresql", "storage backend: postgresql or sqlite")
	pgURL := flag.String("postgresql-url", "postgres://127.0.0.1:5432/ferretdb", "PostgreSQL URL (postgresql handler)")
	sqliteURL := flag.String("sqlite-url", "file:data/", "SQLite directory URI (sqlite handler)")
	logLevel := flag.String("log-level", "error", "log level: debug, info, warn or error")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "lintel-ferretdb: bad -log-level %q: %v\n", *logLevel, err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:      ferretdb.ListenerConfig{TCP: *listen},
		Logger:        logger,
		Handler:       *handler,
		PostgreSQLURL: *pgURL,
		SQLiteURL:     *sqliteURL,
	})
	if err != nil {
		logger.Error("cannot start FerretDB", "error", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintf(os.Stderr, "lintel-ferretdb: serving on %s (%s backend)\n", *listen, *handler)
	if err := f.Run(ctx); err != nil {
		logger.Error("FerretDB stopped with an error", "error", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "lintel-ferretdb: stopped")
}
