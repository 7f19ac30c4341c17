export default function EpisodeView({ id }: { id: string }) {
  return (
    <section>
      <h1>{id}</h1>
      <p className="muted">This page is being built.</p>
    </section>
  );
}
