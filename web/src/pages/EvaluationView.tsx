export default function EvaluationView({ name }: { name: string }) {
  return (
    <section>
      <h1>{name}</h1>
      <p className="muted">This page is being built.</p>
    </section>
  );
}
