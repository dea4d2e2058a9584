#!/usr/bin/env node
// Writes src/lookups/secrets/rules/severity.json: one severity per rule of both engines. gitleaks
// and secretlint give none, so Sluice sets them, by what a leaked credential of the kind lets its
// finder do (docs/exposed-credentials.md explains the grades). Run after import-gitleaks-rules.mjs
// when a new rule appears; entries already in the file are kept, so a hand-made change survives.
import fs from 'node:fs';
import path from 'node:path';

const dir = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'src', 'lookups', 'secrets', 'rules');
const gitleaks = JSON.parse(fs.readFileSync(path.join(dir, 'gitleaks.json'), 'utf8'));
const target = path.join(dir, 'severity.json');
const old = fs.existsSync(target) ? JSON.parse(fs.readFileSync(target, 'utf8')).rules : {};

// Private keys and credentials to cloud accounts, code hosts, package registries, payments, AI
// platforms and secret stores: full control of infrastructure, code or money.
const CRITICAL = /private-key|^aws|^gcp|^azure|^alibaba|^github-(?:pat|fine-grained|app|oauth|refresh)|^gitlab-(?:pat|ptt|rrt|runner|deploy|cicd|feed|kubernetes|oauth|scim)|^stripe|^hashicorp|^vault|^digitalocean|^heroku|^doppler|^pulumi|^databricks|^openai|^anthropic|^1password|^npm|^pypi|^rubygems|^shopify|^square|^paypal|^braintree|^plaid|^coinbase|^kraken|^flutterwave|^age-secret|^clojars|^nuget|^artifactory|^hugging|^cloudflare|^fly|^vercel|^netlify|^planetscale|^mongo|^snowflake|^huggingface|^groq|^grafana-service|^github$|^aws$|^gcp$|^privatekey$|^npm$|^openai$|^anthropic$|^hashicorp-vault$|^vercel$|^1password$|^databricks$|^huggingface$|^groq$|^shopify$|^database-connection-string$/;
// Identifiers that are public by design or grant nothing alone.
const LOW = /client-id|-id$|public|site-key|^sentry-org|^facebook-page|^mapbox-api-token/;
// Broad patterns and shapes that often match non-secrets.
const MEDIUM = /^generic|^jwt|^curl|password|^basicauth$|^docker$|^notion$|^figma$|^linear$|^sendgrid$|^slack$|^gitlab$|^grafana$/;

function grade(id) {
  if (LOW.test(id)) return 'low';
  if (CRITICAL.test(id)) return 'critical';
  if (MEDIUM.test(id)) return 'medium';
  return 'high';
}

const secretlint = ['1password', 'anthropic', 'aws', 'basicauth', 'database-connection-string', 'databricks', 'docker', 'figma', 'gcp', 'github', 'gitlab', 'grafana', 'groq', 'hashicorp-vault', 'huggingface', 'linear', 'notion', 'npm', 'openai', 'privatekey', 'sendgrid', 'shopify', 'slack', 'vercel'];
const rules = {};
for (const r of gitleaks.rules) rules[r.id] = old[r.id] ?? grade(r.id);
for (const id of secretlint) rules[`secretlint/${id}`] = old[`secretlint/${id}`] ?? grade(id);
fs.writeFileSync(
  target,
  `${JSON.stringify({ note: 'Sluice severities per rule (gitleaks and secretlint grade none); see docs/exposed-credentials.md', rules }, null, 1)}\n`,
);
const counts = {};
for (const s of Object.values(rules)) counts[s] = (counts[s] ?? 0) + 1;
console.log(counts);
