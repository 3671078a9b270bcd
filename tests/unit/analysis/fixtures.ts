/** Transcripts shared by the analysis tests. */

/** A realistic discovery-and-pricing call: Alex Kim (rep, Acme) with Dana Reyes (prospect). */
export const SALES_CALL = `Alex: Hi Dana, thanks for making the time today. I'm Alex from Acme.
Dana: Hi Alex, happy to chat.
Alex: Before I show you anything, what does your team's process for reviewing calls look like today?
Dana: Honestly it's mostly manual. Our managers listen to a handful of recordings each week and take notes in a spreadsheet. It doesn't scale, and the reps rarely get feedback in time to use it.
Alex: How many reps are on the team, and how often do managers get to coach each of them?
Dana: We have about forty reps across two regions. Each manager might review two or three calls per rep a month, if that.
Alex: Got it. Why is that a priority right now rather than next year?
Dana: We missed our target last quarter, and leadership thinks call quality is part of the problem. We want to see improvement before the summer.
Alex: That makes sense. So our platform analyses every call automatically and scores it on talk ratio, questions, next steps and objection handling. Managers get a short list of calls worth reviewing, and reps get coaching insights right after each call. We integrate with Salesforce, so the scores sit next to the opportunity.
Dana: That sounds useful, but I'm worried about the price. The last tool we looked at was really expensive for a team our size.
Alex: That's a fair concern. Pricing is per seat, and for forty reps we'd be looking at the team plan, which includes the Salesforce integration. Most teams your size see the cost covered by one extra closed deal a quarter. What budget range did you have in mind for this?
Dana: We set aside something for enablement tools this year, but I'm not sure it covers a full rollout.
Alex: Understood. We could start with a pilot for one region, twenty reps, and expand once you see results. Would that work for you?
Dana: A pilot could work. I'd need to run it past our VP of Sales.
Alex: Great. As a next step, I'll send you a proposal for the pilot by Friday, and let's schedule a call with your VP next Tuesday at 2pm. Does that work?
Dana: Yes, Tuesday works. Send the calendar invite to me and I'll forward it.
Alex: Will do. Thanks Dana, talk soon.`;

export const words = (n: number, word = 'word'): string => Array.from({ length: n }, () => word).join(' ');

/** A poorly run call: Sam (rep) pitches at length with fillers, ignores two objections, sets no next step. */
export const POOR_CALL = `Sam: Hi Jordan, this is Sam from Acme. Um, so, basically I wanted to, like, walk you through our platform today. So we actually started the company about six years ago and, uh, we basically focus on call analytics for sales teams. Our platform records every call, transcribes it, and, um, scores it on a bunch of things that matter. We have dashboards for managers, we have coaching for reps, we have, like, a whole library of best practice calls that you can, you know, share with new hires. Um, and we integrate with basically every CRM out there, so the data just flows. Our customers love it, honestly, and, uh, we have a lot of logos in your space. The dashboards are really, really nice and, um, they update in real time. And basically you can filter by team, by rep, by deal stage, by whatever you want really. I think your team would actually get a lot out of it, and, uh, the onboarding is super quick too, like a couple of weeks.
Jordan: Okay. Honestly the timing is not great. We are in the middle of a reorg and this is not a priority this quarter.
Sam: Okay.
Sam: Um, so anyway, the other thing is the mobile app. Basically reps can, like, review their calls on the go, and, uh, managers get notifications when a deal looks at risk. It's actually really popular with our bigger customers.
Jordan: It also sounds expensive for a team our size.
Sam: Right. So, um, yeah, anyway the dashboards are, you know, really flexible and we basically have everything you need.
Jordan: I have to run to another meeting.
Sam: Okay, thanks, bye.`;
