/**
 * A small decider for the runtime's unit tests: a wallet with deposits, spends refused past the
 * balance, and claims that are idempotent (a second claim of one ticket appends nothing).
 */
import { type Decider, DomainError } from '../../../shared/domain/decider.ts';
import { Type } from '@sinclair/typebox';
import { type EventCatalogue, eventCatalogue } from '../../../shared/domain/event-catalogue.ts';

export type WalletCommand =
  { type: 'deposit'; amount: number } | { type: 'spend'; amount: number } | { type: 'claim'; ticket: string };
/** The wallet's catalogue: category `wallet`, streams `wallet-{id}`. */
export const walletEvents = (): EventCatalogue<WalletEvent> =>
  eventCatalogue<WalletEvent>('wallet', {
    Deposited: { schema: Type.Object({ amount: Type.Number() }) },
    Spent: { schema: Type.Object({ amount: Type.Number() }) },
    Claimed: { schema: Type.Object({ ticket: Type.String() }) },
  });

export type WalletEvent =
  | { type: 'Deposited'; data: { amount: number } }
  | { type: 'Spent'; data: { amount: number } }
  | { type: 'Claimed'; data: { ticket: string } };
export interface WalletState {
  balance: number;
  claimed: string[];
}

export const wallet: Decider<WalletCommand, WalletState, WalletEvent> = {
  initialState: { balance: 0, claimed: [] },
  decide(command, state) {
    switch (command.type) {
      case 'deposit':
        return [{ type: 'Deposited', data: { amount: command.amount } }];
      case 'spend':
        if (state.balance < command.amount)
          throw new DomainError('INSUFFICIENT', `balance ${state.balance} < ${command.amount}`);
        return [{ type: 'Spent', data: { amount: command.amount } }];
      case 'claim':
        return state.claimed.includes(command.ticket) ? [] : [{ type: 'Claimed', data: { ticket: command.ticket } }];
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'Deposited':
        return { ...state, balance: state.balance + event.data.amount };
      case 'Spent':
        return { ...state, balance: state.balance - event.data.amount };
      case 'Claimed':
        return { ...state, claimed: [...state.claimed, event.data.ticket] };
    }
  },
};
