module github.com/keelmcp/keel/postgres

go 1.25.0

require (
	github.com/go-json-experiment/json v0.0.0-20251027170946-4849db3c2f7e
	github.com/jackc/pgx/v5 v5.12.0
	github.com/keelmcp/keel v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/keelmcp/keel/internal/pgtest v0.0.0
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace github.com/keelmcp/keel => ../

replace github.com/keelmcp/keel/internal/pgtest => ../internal/pgtest
