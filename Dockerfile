# syntax=docker/dockerfile:1

# Build stage: compiles better-sqlite3 (when no prebuilt binary fits) and the TypeScript.
FROM node:22-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app

# Dependencies first, so that a source change does not rebuild the native module. `prepare` (the
# TypeScript build) needs the sources, so scripts are skipped here and better-sqlite3's own install
# script is run on its own.
COPY package.json package-lock.json ./
# s3rver's fast-xml-parser is this local package (see vendor/), installed as a link to it.
COPY vendor ./vendor
RUN npm ci --ignore-scripts \
 && npm rebuild better-sqlite3

COPY tsconfig.json ./
COPY src ./src
COPY pipelines ./pipelines
COPY fixtures ./fixtures
RUN npm run build \
 && npm prune --omit=dev

# Runtime stage: no compiler, no dev dependencies, no TypeScript sources.
FROM node:22-bookworm-slim
# SLUICE_HOST: `sluice serve` binds loopback only unless asked; inside a container that would be
# unreachable through a published port, so the image asks for every interface (the container's).
ENV NODE_ENV=production \
    SLUICE_DATA_DIR=/data \
    SLUICE_HOST=0.0.0.0
WORKDIR /app
RUN groupadd --system sluice \
 && useradd --system --gid sluice --home-dir /app --no-create-home --shell /usr/sbin/nologin sluice \
 && mkdir -p /data \
 && chown sluice:sluice /data

COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/vendor ./vendor
COPY --from=build /app/dist ./dist
# tsc does not copy .sql files; from dist/ the engine reads them from the source tree's path.
COPY --from=build /app/src/storage/sqlite/migrations ./src/storage/sqlite/migrations
COPY --from=build /app/src/storage/postgres/migrations ./src/storage/postgres/migrations
# The dashboard's static files are read from the source tree, as the migrations are.
COPY --from=build /app/src/api/dashboard ./src/api/dashboard
# `sluice demo` runs over this fixture.
COPY --from=build /app/fixtures/gender-10k.csv ./fixtures/gender-10k.csv

# The SQLite database and the embedded S3 server's objects. Owned by `sluice` before VOLUME, so a
# fresh named volume starts out writable for it.
VOLUME /data
USER sluice

# `sluice serve`: the HTTP API on SLUICE_HOST:SLUICE_PORT (every interface of the container), with
# job workers in the same process.
EXPOSE 8080
ENTRYPOINT ["node", "dist/src/main/cli.js"]
# Run the image with `worker` for job workers without the API.
CMD ["serve"]
