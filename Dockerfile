# Sightline in a container (used by docker-compose.yml). The TypeScript sources run through tsx:
# no build step. better-sqlite3 compiles from source here (about 90 s).
FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional && npm rebuild better-sqlite3
COPY bin ./bin
COPY src ./src
COPY operations ./operations
COPY sandbox ./sandbox
COPY tsconfig.json ./
ENV HOST=0.0.0.0 PORT=8080 SIGHTLINE_DB=/data/sightline.db
EXPOSE 8080
CMD ["node", "bin/sightline.mjs", "start"]
