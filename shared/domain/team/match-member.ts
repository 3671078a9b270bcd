/**
 * Who a call belongs to. Spec: `repEmail` "is used to match the call to a team member"; tags and
 * notes "are attached to the rep matched through repEmail. When no rep matches, they are attached
 * to the team owner." Matching ignores case and surrounding spaces; the stored spelling is returned
 * for display. The owner's own e-mail attributes to the owner.
 */
import { emailKey, type ActiveTeam } from './team-state.ts';

export type Attribution =
  { kind: 'member'; memberId: string; email: string; name: string } | { kind: 'owner'; email: string; name: string };

/** The member whose e-mail equals `repEmail` ignoring case, else the team owner. */
export const matchMember = (team: ActiveTeam, repEmail: string | undefined): Attribution => {
  const key = repEmail === undefined ? undefined : emailKey(repEmail);
  const member = key === undefined ? undefined : team.members.find((m) => emailKey(m.email) === key);
  if (member) return { kind: 'member', memberId: member.memberId, email: member.email, name: member.name };
  return { kind: 'owner', email: team.owner.email, name: team.owner.name };
};

/** The unrevoked key with this hash, if any (hashes are HMAC-SHA256 hex; compare is exact). */
export const activeKeyByHash = (team: ActiveTeam, keyHash: string): { keyId: string; label: string } | undefined => {
  for (const key of team.apiKeys.values()) {
    if (key.keyHash === keyHash && key.revokedAt === undefined) return { keyId: key.keyId, label: key.label };
  }
  return undefined;
};
